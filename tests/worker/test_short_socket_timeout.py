"""A worker with a socket timeout under its idle BLPOP's 5 s idles quietly and picks up work."""

from collections.abc import Callable

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.support import Command, command_calls, running, wait_until

OPTIONS = {"socket_timeout": 1}
IDLE_BLPOPS = 4  # BLPOPs that ran to their end: the worker idled past its socket timeout


def test_an_idle_worker_logs_no_timeouts_and_runs_the_next_task(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    redis_client: redis.Redis,
) -> None:
    """Each BLPOP blocked for 5 s: the read timed out after 1 s, and the idle worker logged
    "Redis ... is unreachable" every second or two."""
    before = command_calls(redis_client).get("blpop", 0)
    with running(start_worker(options=OPTIONS)) as worker:
        wait_until(
            lambda: command_calls(redis_client).get("blpop", 0) - before >= IDLE_BLPOPS,
            f"{IDLE_BLPOPS} idle BLPOPs answered",
        )
        assert "Fetch failed" not in worker.log
        assert "unreachable" not in worker.log

        result = echo.enqueue("after idling")
        wait_until(
            lambda: result.refresh() or result.status == TaskResultStatus.SUCCESSFUL,
            "the task enqueued to the idle worker ran",
        )
        assert "Fetch failed" not in worker.log
