"""A retry policy is sync code, called and never awaited, and it is asked off the event loop
for an ``async def`` task as in a worker thread for a sync one. Asked on the loop, a policy
that read the database met Django's SynchronousOnlyOperation there, which was logged as the
policy raising, and the async task ended FAILED at its first error while the same policy
retried a sync task."""

from pathlib import Path

import pytest

from django_threadmill.compat import Task, TaskResultStatus
from django_threadmill.testing import Threadmill
from tests.support import run_to_completion, worker

from .policies_that_read_the_database import ATTEMPTS, afails, fails


def assert_retried_then_failed(task: Task, result_id: str) -> None:
    result = task.get_result(result_id)
    assert (result.status, result.attempts) == (TaskResultStatus.FAILED, ATTEMPTS), result.errors
    assert [error.exception_class for error in result.errors] == [ConnectionError] * ATTEMPTS


@pytest.mark.django_db
@pytest.mark.parametrize("task", [fails, afails], ids=["sync", "async"])
def test_a_drain_retries_a_task_whose_policy_reads_the_database(
    threadmill: Threadmill, task: Task
) -> None:
    result = task.enqueue()
    assert threadmill.drain() == ATTEMPTS
    assert_retried_then_failed(task, result.id)


@pytest.mark.usefixtures("backend")
def test_a_worker_retries_an_async_task_whose_policy_reads_the_database(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    result = afails.enqueue()
    output = run_to_completion(
        worker(
            redis_url,
            key_prefix,
            "--burst",
            extra_env={"THREADMILL_DB": str(tmp_path / "db.sqlite3")},
        )
    )
    assert "Retry policy raised" not in output
    assert_retried_then_failed(afails, result.id)
