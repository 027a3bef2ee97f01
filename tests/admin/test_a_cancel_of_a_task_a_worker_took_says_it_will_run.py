"""A cancel of a task a worker took after the list showed it READY: the message says the worker
has it, that it will run, and what to do, not "READY (reserved by a worker) now, not READY"."""

from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import add
from tests.admin.conftest import act
from tests.backend_support import reserve, start


def test_a_task_a_worker_reserved_is_left_alone_saying_it_will_run(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """It said "the task is READY (reserved by a worker) now, not READY or delayed (it changed
    meanwhile, or was never so)": READY, yet not READY."""
    task_id = add.enqueue(1, 1).id
    reserve(backend, task_id)  # a worker took it between the list and the click

    messages = act(operator, "cancel", task_id)

    assert messages == [
        "0 tasks cancelled.",
        "1 left alone: a worker has taken the task (reserved, not started yet) and will run "
        "it: a cancel stops only a task no worker has taken. To keep it from running, pause its "
        "queue and stop that worker gracefully (it hands back the tasks it has not started), "
        f"then cancel again (docs/lifecycle.md, Pausing a queue): {task_id}.",
    ]
    assert backend.get_result(task_id).status == TaskResultStatus.READY


def test_a_running_task_is_left_alone_saying_a_running_attempt_is_not_cancelled(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = add.enqueue(1, 1).id
    start(backend, task_id)

    messages = act(operator, "cancel", task_id)

    assert messages == [
        "0 tasks cancelled.",
        "1 left alone: the task is RUNNING, and a cancel does not stop a running attempt "
        f"(docs/lifecycle.md, Cancel, requeue, purge): {task_id}.",
    ]
    assert backend.get_result(task_id).status == TaskResultStatus.RUNNING
