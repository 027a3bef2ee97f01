"""The checks and the errors name the primary the sentinels named, not LOCATION, whose host is
never used under Sentinel.

Before, a check said "TASKS['default'] at redis://sentinel-managed/0: maxmemory-policy is ...",
naming no server of the three or more behind the sentinels. And a primary they still named that
did not answer (down, restarting in place, not yet called down) made every call say "Redis at
redis://sentinel-managed/0 is unreachable (...). Start Redis or fix TASKS LOCATION", and the
check's hint "fix LOCATION (host, port, ...)": operators were sent to a setting that was fine,
for as long as the sentinels took to call the primary down (30 s by default), and on each
restart of the primary in place. A primary made a replica behind their back was to be failed over
with "SENTINEL FAILOVER <service_name>", the name left out.
"""

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import UNREACHABLE, check_redis
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_sentinel import SERVICE, LocalSentinel, local_sentinel
from tests.servers.redis_server import RedisProcess

from .conftest import LOCATION

NEVER_DOWN_MS = 600_000  # the sentinels call no primary down while the test runs


@pytest.fixture(scope="module")
def sentinel_setup() -> Iterator[LocalSentinel]:
    """A setup of this module's own, its sentinels slow to call its primary down: the test
    stops the primary, which they go on naming."""
    with local_sentinel() as setup:
        for sentinel in setup.sentinels:
            client = redis.Redis(port=sentinel.port)
            try:
                client.sentinel_set(SERVICE, "down-after-milliseconds", NEVER_DOWN_MS)
            finally:
                client.close()
        yield setup


def test_a_check_names_the_primary_it_read(
    backend: ThreadmillTaskBackend, sentinel_setup: LocalSentinel
) -> None:
    primary = sentinel_setup.current_primary()
    client = redis.Redis(port=primary.port)
    try:
        client.config_set("maxmemory-policy", "allkeys-lru")
        messages = check_redis(backend)
    finally:
        client.config_set("maxmemory-policy", "noeviction")
        client.close()
    [evicting] = [message for message in messages if message.id == "threadmill.E003"]
    assert evicting.msg == (
        f"TASKS['default'] at {LOCATION} (the primary the sentinels named, 127.0.0.1:"
        f"{primary.port}): maxmemory-policy is 'allkeys-lru', so Redis may evict queued tasks."
    )


def test_a_primary_made_a_replica_behind_the_sentinels_back_names_the_service_to_fail_over(
    backend: ThreadmillTaskBackend, sentinel_setup: LocalSentinel, tmp_path: Path
) -> None:
    """Before, "... or SENTINEL FAILOVER <service_name>", where the E013 hint named it."""
    with ExitStack() as stack:
        other = RedisProcess(tmp_path)
        stack.callback(other.kill)
        other.start()
        primary = redis.Redis(port=sentinel_setup.current_primary().port)
        stack.callback(primary.close)
        primary.replicaof("127.0.0.1", other.port)
        stack.callback(primary.replicaof, "NO", "ONE")
        with pytest.raises(BrokerUnavailable, match=rf"or SENTINEL FAILOVER {SERVICE}; nothing"):
            echo.enqueue("on a replica")


def test_the_calls_and_the_check_name_the_primary_and_the_sentinels_not_location(
    backend: ThreadmillTaskBackend, sentinel_setup: LocalSentinel
) -> None:
    primary = sentinel_setup.primary
    assert echo.enqueue("before").id
    primary.kill()
    said = rf"The primary 127\.0\.0\.1:{primary.port} the sentinels named for Redis at {LOCATION}"
    fix = r"is unreachable \(.*\)\. Start it, or wait for the sentinels to promote a replica .*"
    with pytest.raises(BrokerUnavailable, match=rf"^{said} {fix}SENTINEL MASTER {SERVICE}:"):
        echo.enqueue("while down")
    with pytest.raises(BrokerUnavailable, match=rf"^{said} {fix}nothing was written\.$") as caught:
        asyncio.run(echo.aenqueue("while down"))
    assert "LOCATION" not in str(caught.value)
    [message] = check_redis(backend)
    assert message.id == UNREACHABLE
    assert message.hint == (
        "Start the sentinels and the primary they name (or wait for them to promote a replica), "
        "or fix OPTIONS['sentinel']['sentinels']; LOCATION's host and port are not used under "
        "Sentinel."
    )
    primary.start()  # as the message says: the same primary, restarted in place
    sentinel_setup.wait_until_replicated(primary, by_sentinels=False)
    assert echo.enqueue("after").id
