"""A task given another retry policy than the one at its path (``dataclasses.replace``, a
``task_class`` built by hand) is refused at enqueue: a worker imports the task at its path and
asks that task's policy, so the other one was dropped, silently, and the task retried as its
decorator said."""

import re
from dataclasses import replace

import pytest

from django_threadmill.compat import InvalidTask, TaskResultStatus
from django_threadmill.retry import ExponentialBackoff

from .tasks import NO_WAIT, flaky, plain

pytestmark = pytest.mark.usefixtures("backend")


@pytest.mark.parametrize(
    ("task", "policy"),
    [(flaky, ExponentialBackoff(max_attempts=10)), (flaky, None), (plain, NO_WAIT)],
    ids=["another", "none", "one-where-none-is"],
)
def test_another_policy_is_an_invalid_task_naming_the_fix(
    task: object, policy: ExponentialBackoff | None
) -> None:
    changed = replace(task, retry=policy)  # type: ignore[type-var]
    args = [1] if changed.takes_context else []
    with pytest.raises(
        InvalidTask,
        match=(
            rf"^Task '{changed.module_path}' carries retry={re.escape(repr(policy))}, not the "
            r"policy of the "
            r"task at its path \(retry=.*\), which is the one a worker asks\. Set it with "
            r"@task\(retry=\.\.\.\) where the task is declared\.$"
        ),
    ):
        changed.enqueue(*args)


def test_an_equal_policy_and_other_changes_enqueue() -> None:
    same = replace(
        flaky, retry=ExponentialBackoff(base_delay=0, max_delay=0, jitter=0, max_attempts=3)
    )
    assert same.retry is not flaky.retry
    assert same.enqueue(1).status == TaskResultStatus.READY
    assert replace(flaky, priority=3).enqueue(1).status == TaskResultStatus.READY
    assert flaky.using(queue_name="default").enqueue(1).status == TaskResultStatus.READY
