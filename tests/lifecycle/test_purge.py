"""purge_finished deletes a queue's finished results, optionally by status, and nothing else."""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Outcome
from django_threadmill.compat import TaskResultDoesNotExist, TaskResultStatus

from .support import ack, run
from .tasks import plain


@pytest.fixture
def finished(broker: Broker) -> dict[str, list[str]]:
    """Five successful and three failed results in "default", one success in "emails"."""
    for _ in range(8):
        plain.enqueue()
    leases = run(broker)
    for n, lease in enumerate(leases):
        assert ack(broker, lease, Outcome.SUCCESSFUL if n < 5 else Outcome.FAILED)
    plain.using(queue_name="emails").enqueue()
    [email] = run(broker, "emails")
    assert ack(broker, email)
    return {
        "successful": [lease.task_id for lease in leases[:5]],
        "failed": [lease.task_id for lease in leases[5:]],
        "emails": [email.task_id],
        "waiting": [plain.enqueue().id],
    }


def test_purge_by_status_deletes_only_that_status(
    backend: ThreadmillTaskBackend, finished: dict[str, list[str]]
) -> None:
    assert backend.purge_finished("default", TaskResultStatus.FAILED, batch_size=2) == 3
    for task_id in finished["failed"]:
        with pytest.raises(TaskResultDoesNotExist):
            backend.get_result(task_id)
    for task_id in finished["successful"]:
        assert backend.get_result(task_id).status == TaskResultStatus.SUCCESSFUL


def test_purge_deletes_every_finished_result_of_one_queue_only(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    finished: dict[str, list[str]],
    redis_client: redis.Redis,
) -> None:
    assert backend.purge_finished("default", batch_size=3) == 8
    assert redis_client.zcard(broker.queue_keys("default").done) == 0
    assert backend.get_result(finished["emails"][0]).status == TaskResultStatus.SUCCESSFUL
    assert backend.get_result(finished["waiting"][0]).status == TaskResultStatus.READY
    assert backend.purge_finished("default") == 0


def test_purge_refuses_unfinished_statuses(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(ValueError, match="cannot purge unfinished tasks"):
        backend.purge_finished("default", TaskResultStatus.READY)


@pytest.mark.parametrize("batch_size", [0, -1, 10_001, 2.5, True])
def test_purge_refuses_a_batch_size_that_would_loop_or_hold_redis(
    backend: ThreadmillTaskBackend, finished: dict[str, list[str]], batch_size: object
) -> None:
    # A batch size of 0 once sent the purge script again and again, for ever.
    with pytest.raises(ValueError, match=r"batch_size=.* is not a whole number from 1 to 10,000"):
        backend.purge_finished("default", batch_size=batch_size)  # type: ignore[arg-type]
    assert backend.get_result(finished["failed"][0]).status == TaskResultStatus.FAILED
