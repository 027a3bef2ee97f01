"""A return value reads back as JSON gives it, as arguments do: ``{1: "a"}`` returned reads back
``{"1": "a"}``, while ``task_finished`` receivers see the value as the task returned it
(normalised as Django's ImmediateBackend does) (docs/lifecycle.md, Where results differ from
Django's own backends)."""

from typing import Any

from django_threadmill.compat import TaskResult, TaskResultStatus, task, task_finished
from django_threadmill.testing import drain


@task
def keyed_by_numbers() -> dict[int, str]:
    return {1: "a", 2: "b"}


def test_keys_that_are_not_strings_read_back_as_strings() -> None:
    seen: list[Any] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(task_result.return_value)

    task_finished.connect(receiver)
    try:
        result = keyed_by_numbers.enqueue()
        assert drain() == 1
    finally:
        task_finished.disconnect(receiver)
    assert seen == [{1: "a", 2: "b"}]
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"1": "a", "2": "b"}
