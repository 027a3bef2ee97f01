"""A task whose retry policy keeps the ``TaskResult`` it was shown: at module level, so
``load_task`` imports it."""

from datetime import timedelta

from django_threadmill.compat import TaskResult
from django_threadmill.retry import RetryContext
from django_threadmill.task import task

# The TaskResult each call of the policy was shown, in order.
SHOWN: list[TaskResult] = []


def keeps_what_it_is_shown(context: RetryContext) -> timedelta | None:
    """Keep the failed attempt's TaskResult, and retry at once: a policy that times its
    retries from the task's enqueue or first start reads these fields."""
    SHOWN.append(context.task_result)
    return timedelta(0)


@task(retry=keeps_what_it_is_shown)
def shows_its_policy() -> None:
    """Carry a policy that keeps what it is shown."""
