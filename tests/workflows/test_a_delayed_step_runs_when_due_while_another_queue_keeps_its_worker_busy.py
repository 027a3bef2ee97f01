"""A step delayed with ``run_after`` runs once due on a worker that serves its queue and another
one that keeps getting tasks (docs/workflows.md, The API: the task's own ``run_after`` holds).

The step became due in its queue's delayed set, so that queue answered the worker's refill
with nothing ready, and was taken for empty: the refills that the other queue's wake tokens
brought asked that queue alone, and forgot when the delayed step would be due. While such
tokens came more often than an idle worker's wait for one, the step never ran.
"""

from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.workflows import WorkflowResult, chain, step
from tests.support import Command, holds_within, running, wait_until

from .tasks import add, number

DUE_IN = timedelta(seconds=1)  # after the first step ended, well before the wait below ends


def succeeded(result: TaskResult | None) -> bool:
    if result is None:
        return False
    result.refresh()
    return result.status == TaskResultStatus.SUCCESSFUL


def stored(flow: WorkflowResult, index: int) -> bool:
    flow.refresh()
    return flow.results[index] is not None


def test_a_step_delayed_with_run_after_runs_while_another_queue_gets_task_after_task(
    start_worker: Callable[..., Command],
) -> None:
    with running(start_worker("--threads", "1")):
        flow = chain(
            step(number.using(queue_name="emails"), 1),
            step(add.using(run_after=timezone.now() + DUE_IN), 10),
        ).enqueue()
        wait_until(lambda: stored(flow, 1), "the delayed step stored by the drainer")

        def ran_beside_a_task_of_emails() -> bool:
            # One task of the other queue at a time: each wakes the idle worker for "emails".
            other = number.using(queue_name="emails").enqueue(2)
            wait_until(lambda: succeeded(other), "a task of emails")
            return succeeded(flow.results[1])

        assert holds_within(ran_beside_a_task_of_emails, 30), "the delayed step never ran"

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert [r.return_value for r in flow.results if r is not None] == [1, 11]
