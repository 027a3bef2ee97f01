"""result_ttl: finished results expire after it; nothing pending ever does.

docs/design.md, Nothing pending ever expires.
"""

from datetime import UTC, datetime

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultDoesNotExist, TaskResultStatus
from testproject.example.tasks import echo
from tests.backend_support import start, succeed
from tests.lifecycle.support import wait_until

pytestmark = pytest.mark.parametrize("tasks_options", [{"result_ttl": 0.05}])


def gone(backend: ThreadmillTaskBackend, task_id: str) -> bool:
    try:
        backend.get_result(task_id)
    except TaskResultDoesNotExist:
        return True
    return False


def test_finished_result_expires_pending_tasks_stay(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    finished, running, waiting = echo.enqueue(1), echo.enqueue(2), echo.enqueue(3)
    succeed(backend, finished.id, 1)
    start(backend, running.id)
    delayed = echo.using(run_after=datetime(2100, 1, 1, tzinfo=UTC)).enqueue(4)
    wait_until(lambda: gone(backend, finished.id), "the finished result expiring")
    assert backend.get_result(running.id).status == TaskResultStatus.RUNNING
    assert backend.get_result(waiting.id).status == TaskResultStatus.READY
    assert backend.get_result(delayed.id).status == TaskResultStatus.READY
    for task_id in (running.id, waiting.id, delayed.id):
        key = backend.broker.record_key(task_id)
        assert key is not None
        assert redis_client.pttl(key) == -1
