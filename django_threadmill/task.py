"""ThreadmillTask (a django.tasks ``Task`` with a retry policy) and a ``@task`` that sets it.

On Django 6.1, ``@django.tasks.task(retry=...)`` forwards ``retry`` to the backend's
``task_class``, which is ``ThreadmillTask``. Django 6.0 does not forward extra keywords, so
``django_threadmill.task.task`` builds the task itself and works the same on 6.0, 6.1 and 5.2.
"""

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from .compat import DEFAULT_TASK_QUEUE_NAME, InvalidTask, Task, task_backends
from .retry import RetryPolicy

DEFAULT_TASK_BACKEND_ALIAS = "default"
DEFAULT_TASK_PRIORITY = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadmillTask(Task):  # type: ignore[misc]
    """A ``Task`` that may carry a retry policy, used when a failed attempt may run again."""

    retry: RetryPolicy | None = None
    # None follows the backend's OPTIONS["enqueue_on_commit"]; True or False overrides it.
    enqueue_on_commit: bool | None = None

    def __post_init__(self) -> None:
        # Explicit base call: zero-argument super() breaks in slotted dataclasses before 3.14.
        Task.__post_init__(self)
        if self.retry is not None and not callable(self.retry):
            raise InvalidTask(
                f"retry={self.retry!r} on task {self.module_path!r} is not a retry policy. "
                "Pass ExponentialBackoff(...) or a callable policy(context) -> timedelta | None."
            )
        if self.enqueue_on_commit not in (None, True, False):
            raise InvalidTask(
                f"enqueue_on_commit={self.enqueue_on_commit!r} on task {self.module_path!r} is "
                "not a choice. Pass True (wait for the commit), False (write at once) or None "
                "(follow OPTIONS['enqueue_on_commit'])."
            )

    def using(self, *, enqueue_on_commit: bool | None = None, **changes: Any) -> Task:
        """Create a new Task with modified defaults, ``enqueue_on_commit`` among them."""
        task = Task.using(self, **changes)
        if enqueue_on_commit is None:
            return task
        return replace(task, enqueue_on_commit=enqueue_on_commit)


def _accepts_retry(task_class: type) -> bool:
    return "retry" in {f.name for f in fields(task_class)}


def task(
    function: Callable[..., Any] | None = None,
    *,
    priority: int = DEFAULT_TASK_PRIORITY,
    queue_name: str = DEFAULT_TASK_QUEUE_NAME,
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
    takes_context: bool = False,
    retry: RetryPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """Turn a function into a task, like ``django.tasks.task``, accepting ``retry=``.

    Usable bare (``@task``) or called (``@task(retry=ExponentialBackoff(max_attempts=3))``).
    """
    if "run_after" in kwargs:
        raise TypeError(
            "run_after cannot be defined statically with the @task decorator. "
            "Use .using(run_after=...) to set it dynamically."
        )

    def wrapper(func: Callable[..., Any]) -> Task:
        task_class = task_backends[backend].task_class
        extra = dict(kwargs)
        if retry is not None:
            if not _accepts_retry(task_class):
                raise InvalidTask(
                    f"Task backend {backend!r} builds {task_class.__name__}, which has no retry "
                    "policy. Use django_threadmill.backend.ThreadmillTaskBackend for that alias, "
                    "or drop retry=."
                )
            extra["retry"] = retry
        return task_class(
            func=func,
            priority=priority,
            queue_name=queue_name,
            backend=backend,
            run_after=None,
            takes_context=takes_context,
            **extra,
        )

    if function is not None:
        return wrapper(function)
    return wrapper
