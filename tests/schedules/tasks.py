"""Tasks the schedule tests fire, at module level so worker processes import them."""

from datetime import timedelta

from django_threadmill.compat import TaskContext, task
from django_threadmill.task import task as threadmill_task


@task(takes_context=True)
def tick(context: TaskContext, log_path: str) -> None:
    """Append this task's id to ``log_path``, so a test counts runs per slot outside Redis."""
    with open(log_path, "a") as log:
        log.write(f"{context.task_result.id}\n")


@task
def report(kind: str = "daily") -> str:
    return kind


def not_a_task() -> None:
    """A plain function: schedules refuse it."""


@threadmill_task(unique_for=timedelta(minutes=5))
def unique_report() -> None:
    """A unique task: a schedule's slots do not claim its key (threadmill.W007)."""
