"""What a running worker does with a paused queue, seen from a test: the worker and the admin
tests pause queues under a live worker alike."""

from collections.abc import Sequence

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus
from testproject.example.tasks import send_welcome
from tests.support import wait_until


def succeeded(result: TaskResult) -> bool:
    result.refresh()
    return result.status == TaskResultStatus.SUCCESSFUL


def still_ready(results: Sequence[TaskResult]) -> bool:
    for result in results:
        result.refresh()
    return all(result.status == TaskResultStatus.READY for result in results)


def looked_again(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> None:
    """Wait until the worker has acquired from every queue since the tasks enqueued so far.

    A task enqueued to "emails" now runs only after an acquire that follows the wake tokens
    of the tasks before it, and a woken worker asks every queue it serves in that acquire.
    """
    probe = send_welcome.enqueue("probe@example.com")
    wait_until(lambda: succeeded(probe), "the worker running a task of another queue")
    wake = backend.broker.queue_keys("default").wake
    wait_until(lambda: redis_client.llen(wake) == 0, "the worker taking the wake tokens")
