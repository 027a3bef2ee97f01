"""A task that tells the ``enqueue_on_commit`` of the task it runs as: at module level, so a
worker process can run it."""

from django_threadmill.compat import TaskContext
from django_threadmill.task import task


@task(takes_context=True, enqueue_on_commit=True)
def choice_as_run(context: TaskContext) -> bool | None:
    """Return the choice of the task as the worker rebuilt it."""
    return context.task_result.task.enqueue_on_commit
