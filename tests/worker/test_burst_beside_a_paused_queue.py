"""--burst sees a paused queue as empty and stops, leaving its tasks ready, rather than wait for
the resume (docs/lifecycle.md, Pausing a queue)."""

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import add
from tests.support import run_to_completion, worker


def test_burst_beside_a_paused_queue_exits_leaving_its_tasks_ready(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    held = add.enqueue(1, 2)
    backend.broker.pause("default", "test")

    log = run_to_completion(worker(redis_url, key_prefix, "--burst"))

    held.refresh()
    assert held.status == TaskResultStatus.READY, log
