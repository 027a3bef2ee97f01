"""A burst worker runs every task across queues and priorities, and records each outcome."""

from collections.abc import Callable

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example import tasks as examples
from tests.support import Command
from tests.worker import tasks


def test_ten_thousand_tasks_across_queues_and_priorities_all_succeed(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command]
) -> None:
    results = []
    for task in (tasks.square, tasks.square_email, tasks.square_report):
        for priority in (-10, 0, 10):
            calls = [((n,), {}) for n in range(1111)]
            results += backend.enqueue_many(task.using(priority=priority), calls)
    results.append(tasks.square.enqueue(100))
    assert len(results) == 10_000

    worker = start_worker("--threads", "4", "--prefetch", "128", "--burst")
    assert worker.wait(120) == 0, worker.log

    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.return_value == result.args[0] ** 2
        assert len(result.worker_ids) == 1


def test_outcomes_are_recorded_as_django_would(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command]
) -> None:
    failing = examples.fail.enqueue("boom")
    async_sum = examples.async_add.enqueue(2, 3)
    with_context = examples.attempt_info.enqueue()
    not_json = tasks.returns_a_set.enqueue()
    merging_keys = tasks.returns_keys_json_would_merge.enqueue()

    worker = start_worker("--burst")
    assert worker.wait() == 0, worker.log

    failing.refresh()
    assert failing.status == TaskResultStatus.FAILED
    [error] = failing.errors
    assert error.exception_class_path == "builtins.ValueError"
    assert "raise ValueError(message)" in error.traceback
    assert failing.started_at <= failing.last_attempted_at <= failing.finished_at
    assert f"Task failed task_id={failing.id}" in worker.log

    assert async_sum.task.get_result(async_sum.id).return_value == 5
    context_result = backend.get_result(with_context.id)
    assert context_result.return_value == {"attempt": 1, "id": with_context.id}

    not_json.refresh()
    assert not_json.status == TaskResultStatus.FAILED
    assert "returned a set, which is not JSON" in not_json.errors[0].traceback
    merging_keys.refresh()
    assert merging_keys.status == TaskResultStatus.FAILED
    assert (
        "returned a dict, which is not JSON (keys 1 and '1' of one dict are both the JSON key "
        "'1', so one would be lost). Return strings, numbers, booleans, None, lists or dicts "
        "with string keys instead."
    ) in merging_keys.errors[0].traceback


def test_nothing_is_logged_per_successful_task_at_default_verbosity(
    start_worker: Callable[..., Command],
) -> None:
    for n in range(20):
        tasks.square.enqueue(n)
    worker = start_worker("--burst")
    assert worker.wait() == 0
    assert "Worker process started" in worker.log
    assert "square" not in worker.log
