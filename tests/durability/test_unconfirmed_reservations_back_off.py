"""Under durability="replicated" with no replica, reservations no replica confirmed are handed
back unstarted, and the worker backs off as for a Redis away: it held that queue back alone
(as for a key of another type in it), and the hand-back's own wake token cleared the hold, so
it asked again every durability_timeout, logging a WARNING each time."""

from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import Command

UNCONFIRMED = {"durability": "replicated", "durability_timeout": 0.05}


@pytest.fixture(scope="module")
def lone_primary() -> Iterator[RedisProcess]:
    with redis_process() as server:
        yield server


@pytest.fixture
def redis_url(lone_primary: RedisProcess) -> str:
    return lone_primary.url


def test_a_refill_no_replica_confirmed_backs_off_whole(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    task_id = echo.enqueue("not yet").id
    command = Command(
        redis_url, key_prefix, "threadmill_worker", "--processes", "1", "--threads", "1",
        options=UNCONFIRMED,
    )  # fmt: skip
    try:
        command.wait_for_log(r"Fetch failed, retrying in \S+ error=.*handed back unstarted")
        log = command.log
        assert "Fetch from a queue failed" not in log, log
        assert backend.get_result(task_id).status == TaskResultStatus.READY
    finally:
        command.close()
