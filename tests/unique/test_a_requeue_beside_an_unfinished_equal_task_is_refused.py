"""A requeue of a failed unique task is refused while an equal task has not finished.

A failed task releases its unique key, so an equal task enqueued after it is stored and holds
the key. Requeued then (the admin, ``backend.requeue``), the failed task went back to READY
beside it without looking at the key: the two equal tasks ran at once, which is what
``unique_for`` is there to stop (docs/schedules.md, Unique tasks).
"""

from collections.abc import Callable

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import UniqueKeyHeld
from tests.admin.conftest import act, logged_in, staff_user
from tests.backend_support import fail, reserve, start, succeed

from .tasks import refresh

HOLDER_STATES: dict[str, Callable[[ThreadmillTaskBackend, str], object]] = {
    "ready": lambda backend, task_id: None,
    "reserved": reserve,
    "running": start,
}


@pytest.fixture
def operator(db: None) -> Client:
    """Staff who may requeue tasks."""
    return logged_in(staff_user("operator", "view_task", "change_task"))


def failed_then_enqueued_again(backend: ThreadmillTaskBackend) -> tuple[str, str]:
    """Fail a unique task, then enqueue an equal one: (the failed id, the new holder's id)."""
    failed = refresh.enqueue(1).id
    fail(backend, failed, ValueError("boom"))
    holder = refresh.enqueue(1).id
    assert holder != failed  # a FAILED task released its key
    return failed, holder


def holder_of_key(backend: ThreadmillTaskBackend, redis_client: redis.Redis, task_id: str) -> str:
    """Return the id the unique key of ``task_id``'s record names."""
    keys = backend.broker.queue_keys("default")
    digest = redis_client.hget(keys.record(task_id), "unique")
    return str(redis_client.get(f"{keys.unique_prefix}{digest}"))


@pytest.mark.parametrize("state", HOLDER_STATES)
def test_a_requeue_beside_an_unfinished_equal_task_is_refused(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, state: str
) -> None:
    failed, holder = failed_then_enqueued_again(backend)
    HOLDER_STATES[state](backend, holder)

    with pytest.raises(UniqueKeyHeld) as refused:
        backend.requeue(failed)

    assert str(refused.value) == (
        f"Task {failed} was not requeued: an equal unique task, {holder}, has not finished, "
        f"and the two would run at once. Requeue it once {holder} has finished "
        "(docs/schedules.md, Unique tasks)."
    )
    assert (refused.value.task_id, refused.value.holder_id) == (failed, holder)
    assert backend.get_result(failed).status == TaskResultStatus.FAILED
    keys = backend.broker.queue_keys("default")
    assert redis_client.zscore(keys.done, failed) is not None  # still listed as finished
    assert redis_client.zscore(keys.ready, failed) is None
    assert redis_client.ttl(keys.record(failed)) > 0  # still expires with its result
    assert holder_of_key(backend, redis_client, failed) == holder


def test_a_requeue_once_the_equal_task_finished_takes_the_key(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    failed, holder = failed_then_enqueued_again(backend)
    with pytest.raises(UniqueKeyHeld):
        backend.requeue(failed)
    succeed(backend, holder, 1)  # releases the key: no holder now

    assert backend.requeue(failed)

    assert holder_of_key(backend, redis_client, failed) == failed
    assert refresh.enqueue(1).id == failed  # an equal enqueue meets the requeued task


def test_the_admin_requeues_the_others_and_names_the_equal_task(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    other = refresh.enqueue(2).id
    fail(backend, other, ValueError("boom"))
    failed, holder = failed_then_enqueued_again(backend)

    messages = act(operator, "requeue", failed, other)

    assert messages == [
        "1 task requeued.",
        "1 left alone: an equal unique task has not finished, and the two would run at once; "
        "requeue it once that task has finished (docs/schedules.md, Unique tasks): "
        f"{failed} (equal to {holder}).",
    ]
    assert backend.get_result(failed).status == TaskResultStatus.FAILED
    assert backend.get_result(other).status == TaskResultStatus.READY


def test_of_two_equal_failed_tasks_the_admin_requeues_one(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    first, second = failed_then_enqueued_again(backend)
    fail(backend, second, ValueError("boom again"))

    messages = act(operator, "requeue", first, second)

    assert messages[0] == "1 task requeued."
    assert messages[1].endswith(f": {second} (equal to {first}).")
    assert backend.get_result(first).status == TaskResultStatus.READY
    assert backend.get_result(second).status == TaskResultStatus.FAILED
    assert holder_of_key(backend, redis_client, first) == first
