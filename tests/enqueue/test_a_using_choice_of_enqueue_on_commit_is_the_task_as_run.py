"""``task.using(enqueue_on_commit=...)`` is part of the task as enqueued, as priority and
queue_name are: the worker runs that task (``context.task_result.task``, what a task enqueues
itself again from), and a result read back holds it.

The payload kept priority, queue and run_after but not the choice: the task ran, and read back,
with the declared one, so ``context.task_result.task.enqueue(...)`` inside a transaction waited
for its commit although the task was enqueued to write at once.
"""

import json

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.enqueue.on_commit_choice import choice_as_run
from tests.support import run_to_completion, worker

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.mark.parametrize("choice", [False, True])
def test_the_worker_runs_the_task_with_the_choice_it_was_enqueued_with(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, choice: bool
) -> None:
    result = choice_as_run.using(enqueue_on_commit=choice, priority=3).enqueue()
    run_to_completion(worker(redis_url, key_prefix, "--burst"))
    ran = backend.get_result(result.id)
    assert (ran.status, ran.return_value, ran.task) == (
        TaskResultStatus.SUCCESSFUL,
        choice,
        result.task,
    )


def test_a_task_enqueued_without_a_choice_keeps_the_declared_one(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    result = choice_as_run.enqueue()
    run_to_completion(worker(redis_url, key_prefix, "--burst"))
    assert backend.get_result(result.id).return_value is True


def test_a_stored_choice_that_is_no_bool_fails_the_task_naming_it(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    result = choice_as_run.enqueue()
    key = backend.broker.record_key(result.id)
    payload = json.loads(backend.broker.client.hget(key, "payload"))
    backend.broker.client.hset(key, "payload", json.dumps(payload | {"on_commit": 1}))
    log = run_to_completion(worker(redis_url, key_prefix, "--burst"))
    assert (
        f"Task failed task_id={result.id} error=Stored payload of "
        "'tests.enqueue.on_commit_choice.choice_as_run' has on_commit=1; it must be true or "
        "false. It was corrupted."
    ) in log
