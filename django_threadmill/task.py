"""ThreadmillTask (a django.tasks ``Task`` with a retry policy and a unique window) and a ``@task``
that sets them.

On Django 6.1, ``@django.tasks.task(retry=...)`` forwards ``retry`` to the backend's
``task_class``, which is ``ThreadmillTask``. Django 6.0 does not forward extra keywords, so
``django_threadmill.task.task`` builds the task itself and works the same on 6.0, 6.1 and 5.2.
"""

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from inspect import iscoroutinefunction
from typing import Any, cast

from .compat import DEFAULT_TASK_QUEUE_NAME, InvalidTask, Task, task_backends
from .retry import RetryPolicy

DEFAULT_TASK_BACKEND_ALIAS = "default"
DEFAULT_TASK_PRIORITY = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadmillTask(Task):
    """A ``Task`` that may carry a retry policy, and a window in which equal enqueues are one."""

    retry: RetryPolicy | None = None
    # None follows the backend's OPTIONS["enqueue_on_commit"]; True or False overrides it.
    enqueue_on_commit: bool | None = None
    unique_for: timedelta | None = None
    unique_key: Callable[[list[Any], dict[str, Any]], str] | None = None

    def __post_init__(self) -> None:
        # Explicit base call: zero-argument super() breaks in slotted dataclasses before 3.14.
        Task.__post_init__(self)
        self._check_retry()
        if self.enqueue_on_commit not in (None, True, False):
            raise InvalidTask(
                f"enqueue_on_commit={self.enqueue_on_commit!r} on task {self.module_path!r} is "
                "not a choice. Pass True (wait for the commit), False (write at once) or None "
                "(follow OPTIONS['enqueue_on_commit'])."
            )
        self._check_unique()

    def using(self, *, enqueue_on_commit: bool | None = None, **changes: Any) -> Task:
        """Create a new Task with modified defaults, ``enqueue_on_commit`` among them."""
        task = cast(ThreadmillTask, Task.using(self, **changes))  # replace() keeps the class
        if enqueue_on_commit is None:
            return task
        return replace(task, enqueue_on_commit=enqueue_on_commit)

    def _check_retry(self) -> None:
        if self.retry is None:
            return
        if not callable(self.retry):
            raise InvalidTask(
                f"retry={self.retry!r} on task {self.module_path!r} is not a retry policy. "
                "Pass ExponentialBackoff(...) or a callable policy(context) -> timedelta | None."
            )
        # A class is callable, but calling it makes a policy, not a delay: a worker asked
        # ExponentialBackoff(context), which raised, and the task never retried.
        if isinstance(self.retry, type):
            raise InvalidTask(
                f"retry={self.retry.__qualname__} on task {self.module_path!r} is a class, not a "
                f"retry policy. Make one: retry={self.retry.__qualname__}(...)."
            )
        # A policy is called where a task failed, in a worker thread, on the event loop or in
        # the reaper, and never awaited: an async one answered a coroutine, read as "no retry".
        if _is_async(self.retry):
            raise InvalidTask(
                f"retry={self.retry!r} on task {self.module_path!r} is an async policy, which no "
                "worker awaits: its answer is used as the call returns it. Make it a plain def "
                "policy(context) -> timedelta | None."
            )

    def _check_unique(self) -> None:
        if self.unique_for is not None and (
            not isinstance(self.unique_for, timedelta) or self.unique_for.total_seconds() < 0.001
        ):
            raise InvalidTask(
                f"unique_for={self.unique_for!r} on task {self.module_path!r} is not a window. "
                "Pass a timedelta of at least a millisecond, e.g. unique_for=timedelta(minutes=5)."
            )
        if self.unique_key is not None and (
            self.unique_for is None or not callable(self.unique_key)
        ):
            raise InvalidTask(
                f"unique_key={self.unique_key!r} on task {self.module_path!r} needs unique_for and "
                "must be a callable unique_key(args, kwargs) -> str. Add unique_for=timedelta(...)."
            )
        # Called by every enqueue, aenqueue's too, and never awaited: an async one answered a
        # coroutine, so every enqueue of its task failed.
        if self.unique_key is not None and _is_async(self.unique_key):
            raise InvalidTask(
                f"unique_key={self.unique_key!r} on task {self.module_path!r} is an async "
                "function, which enqueue never awaits: it would answer a coroutine, not a key. "
                "Make it a plain def unique_key(args, kwargs) -> str."
            )


def _is_async(function: Callable[..., Any]) -> bool:
    """Tell whether calling ``function`` (or an instance with an async ``__call__``) returns a
    coroutine."""
    return iscoroutinefunction(function) or iscoroutinefunction(type(function).__call__)


def _threadmill_options(task_class: type, backend: str, **options: Any) -> dict[str, Any]:
    """Return the options that were given, refusing them for a class that cannot hold them."""
    given = {name: value for name, value in options.items() if value is not None}
    missing = sorted(set(given) - {f.name for f in fields(task_class)})
    if missing:
        raise InvalidTask(
            f"Task backend {backend!r} builds {task_class.__name__}, which has no "
            f"{' or '.join(missing)}. Use django_threadmill.backend.ThreadmillTaskBackend for that "
            f"alias, or drop {'= and '.join(missing)}=."
        )
    return given


def task(
    function: Callable[..., Any] | None = None,
    *,
    priority: int = DEFAULT_TASK_PRIORITY,
    queue_name: str = DEFAULT_TASK_QUEUE_NAME,
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
    takes_context: bool = False,
    retry: RetryPolicy | None = None,
    unique_for: timedelta | None = None,
    unique_key: Callable[[list[Any], dict[str, Any]], str] | None = None,
    enqueue_on_commit: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Turn a function into a task, like ``django.tasks.task``, accepting our options.

    Usable bare (``@task``) or called (``@task(retry=ExponentialBackoff(max_attempts=3))``,
    ``@task(unique_for=timedelta(minutes=5))``, ``@task(enqueue_on_commit=True)``).
    """
    if "run_after" in kwargs:
        raise TypeError(
            "run_after cannot be defined statically with the @task decorator. "
            "Use .using(run_after=...) to set it dynamically."
        )

    def wrapper(func: Callable[..., Any]) -> Task:
        task_class = task_backends[backend].task_class
        extra = kwargs | _threadmill_options(
            task_class,
            backend,
            retry=retry,
            unique_for=unique_for,
            unique_key=unique_key,
            enqueue_on_commit=enqueue_on_commit,
        )
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
