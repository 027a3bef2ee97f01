"""ThreadmillTaskBackend: the django.tasks API over the enqueue pipeline, and nothing else."""

import inspect
import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any

from django.utils import timezone
from django.utils.module_loading import import_string

from .broker import DEFAULT_PURGE_BATCH_SIZE, Broker, checked_batch_size
from .broker.inspect.source import Source
from .checks import check_backend
from .codec.ids import looked_up_id
from .codec.results import error_json
from .codec.text import utf8_text
from .codec.times import naive_zone_name, now_ms, reads_back
from .compat import (
    TASK_MAX_PRIORITY,
    TASK_MIN_PRIORITY,
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
)
from .conf.settings import check_queue_name, read_settings
from .enqueue.pipeline import Call, EnqueuePipeline, pipeline_for
from .exceptions import Cancelled, ImproperlyConfiguredThreadmill, StepOfCancelledWorkflow
from .observability.tracing import traced_aenqueue, traced_enqueue
from .task import ThreadmillTask
from .wording import a_type, dotted_name

VALID_TASKS_KEPT = 1024  # tasks remembered as valid per backend; more start the set again


class ThreadmillTaskBackend(BaseTaskBackend):
    """Store tasks in Redis for ``manage.py threadmill_worker`` to run."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True
    task_class = ThreadmillTask

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        queues = params.get("QUEUES", [])
        if isinstance(queues, str | bytes) or not isinstance(queues, Iterable):
            # A str would become the set of its letters.
            raise ImproperlyConfiguredThreadmill(
                f"TASKS[{alias!r}]['QUEUES'] is {queues!r}, {a_type(queues)}, not a list of "
                "queue names. Use a list, e.g. ['default', 'emails']."
            )
        super().__init__(alias, params)
        self.settings = read_settings(alias, params)
        self._valid_tasks: dict[int, Task] = {}
        # The task found at each task path checked so far: a task's path is its code's.
        self._found_at: dict[str, Task] = {}
        for queue in [*self.queues, *self.settings.queue_limits, *self.settings.queue_shards]:
            check_queue_name(queue)

    @cached_property
    def pipeline(self) -> EnqueuePipeline:
        """The process-wide enqueue pipeline of this ``TASKS`` entry, shared by threads."""
        return pipeline_for(type(self), self.settings)

    @property
    def broker(self) -> Broker:
        """The shared broker; it connects on first use, never at import time."""
        return self.pipeline.broker

    def validate_task(self, task: Task) -> None:
        """Refuse a task this backend cannot run; a task found valid once is not checked again.

        Tasks are immutable and mostly enqueued many times, and checking one was a tenth of an
        enqueue. One with ``run_after`` is checked each time: that check reads USE_TZ, and
        such a task is usually made for one call.
        """
        if self._valid_tasks.get(id(task)) is task:
            return
        if not isinstance(task, Task):  # Django's own checks read attributes only tasks have
            raise InvalidTask(
                f"{dotted_name(task)!r} is {a_type(task)}, not a task. Decorate it with @task "
                "and enqueue the task it returns."
            )
        _check_alias(task, self.alias)
        _check_not_generator(task)
        _check_priority_and_run_after(task)
        # Before Django's checks: its "Queue '…' is not valid for backend." (QUEUES set) echoed
        # a name no queue can have whole, and did not say what a name may be. A valid name
        # QUEUES does not list still gets Django's words.
        try:
            check_queue_name(task.queue_name)
        except ImproperlyConfiguredThreadmill as exc:
            raise InvalidTask(str(exc)) from exc
        super().validate_task(task)
        if task.run_after is None:
            if len(self._valid_tasks) >= VALID_TASKS_KEPT:
                self._valid_tasks.clear()
            # Keyed by id, holding the task: the id stays its own while it is kept here.
            self._valid_tasks[id(task)] = task

    def check_found_at_its_path(self, task: Task) -> None:
        """Refuse a task a worker would not find: it imports the task at ``task.module_path``.

        Not part of ``validate_task``: that runs as ``@task`` builds the task, before its
        module has bound it to its name. A path found right is remembered, so this is one
        dict lookup per enqueue. A workflow's launch checks each of its steps' tasks too. The
        retry policy must be the one found there too: a worker asks that task's.
        """
        path = task.module_path
        known = self._found_at.get(path)
        if known is not None and known.func is task.func:
            _check_same_policy(task, known)
            return
        _check_not_in_main(task)
        try:
            found: object = import_string(path)
        except ImportError as exc:
            why = f"it does not import: {exc}"
        else:
            if isinstance(found, Task) and found.func is task.func:
                self._found_at[path] = found
                _check_same_policy(task, found)
                return
            why = f"it names {a_type(found)}, not this task"
        raise InvalidTask(
            f"Task {path!r} is not found at its own path ({why}), so no worker could run it. "
            "Decorate the function itself with @task at module level, so the task keeps the "
            "function's name; a task made with task(func) and kept under another name is not "
            "found."
        )

    @traced_enqueue
    def enqueue(self, task: Task, args: Sequence[Any], kwargs: dict[str, Any]) -> TaskResult:
        """Queue up the Task to be executed: one Redis call, shared with concurrent callers.

        With ``enqueue_on_commit``, inside a transaction the write waits for its commit. A
        unique task equal to an unfinished one returns that task's result and stores nothing.
        """
        self.validate_task(task)
        self.check_found_at_its_path(task)
        return self.pipeline.enqueue(task, args, kwargs)

    @traced_aenqueue
    async def aenqueue(self, task: Task, args: Sequence[Any], kwargs: dict[str, Any]) -> TaskResult:
        """Queue up the Task to be executed, on the asyncio client (no thread hop)."""
        self.validate_task(task)
        self.check_found_at_its_path(task)
        return await self.pipeline.aenqueue(task, args, kwargs)

    @traced_enqueue
    def enqueue_many(self, task: Task, calls: Iterable[Call]) -> list[TaskResult]:
        """Queue up many calls of one task in one atomic script call: all are stored, or none.

        Every call is validated and encoded before anything is sent.
        """
        self.validate_task(task)
        self.check_found_at_its_path(task)
        return self.pipeline.enqueue_many(task, calls)

    def get_result(self, result_id: str) -> TaskResult:
        """Return the result of ``result_id`` in any state, until result_ttl after it finished."""
        return self.pipeline.get_result(_checked_id(result_id))

    async def aget_result(self, result_id: str) -> TaskResult:
        """Async twin of ``get_result``, on the asyncio client."""
        return await self.pipeline.aget_result(_checked_id(result_id))

    # Operator actions, fenced by state in the broker's scripts; the admin uses them. ---------

    def cancel(self, result_id: str, reason: str = "") -> bool:
        """Fail a READY (or delayed) task with a ``Cancelled`` error so it never runs.

        Return False, changing nothing, if the task is reserved, running or finished.
        Raise ``TaskResultDoesNotExist`` for an unknown id.
        """
        reason = utf8_text(reason, "cancel() reason")
        error = error_json(Cancelled.before_it_ran(reason))
        state = self.broker.cancel(_checked_id(result_id), error, now_ms())
        if state == "missing":
            raise TaskResultDoesNotExist(result_id)
        return state == "cancelled"

    def requeue(self, result_id: str) -> bool:
        """Give a FAILED task a new attempt: same id, errors and worker ids kept.

        Return False, changing nothing, if the task has not failed (waiting, running, or
        successful) or has run its ``MAX_ATTEMPTS`` attempts (retry.py). Raise
        ``TaskResultDoesNotExist`` for an unknown or expired id, and
        ``StepOfCancelledWorkflow``, changing nothing, for a step of a cancelled workflow, or
        one its workflow recorded as not run: no worker starts one (docs/workflows.md, Cancel),
        so a new attempt would only fail again; and ``UniqueKeyHeld``, changing nothing, for a
        unique task while an equal one that has not finished holds the key, as the two would
        run at once (docs/schedules.md, Unique tasks).
        """
        task_id = _checked_id(result_id)
        if (stopped := self.broker.stopped_step_of(task_id)) is not None:
            raise StepOfCancelledWorkflow(
                task_id, stopped.workflow_id, stopped.step, stopped.why, not_run=stopped.not_run
            )
        state = self.broker.requeue(task_id)
        if state == "missing":
            raise TaskResultDoesNotExist(result_id)
        return state == "requeued"

    def purge_finished(
        self,
        queue_name: str,
        status: TaskResultStatus | None = None,
        *,
        batch_size: int = DEFAULT_PURGE_BATCH_SIZE,
    ) -> int:
        """Delete the finished results of ``queue_name`` (SUCCESSFUL, FAILED, or both).

        Waiting and running tasks are never touched. Return how many results were deleted.
        ``queue_name`` is a queue of QUEUES (any, when it is empty) or one Redis knows, as in
        the admin; any other raises ``ImproperlyConfiguredThreadmill`` naming them, so a
        misspelt one is not read as a queue with nothing to delete.
        """
        if status not in (None, TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED):
            why = (
                "cannot purge unfinished tasks"
                if status in TaskResultStatus.values
                else "names no task status"
            )
            raise ValueError(
                f"purge_finished(status={status!r}) {why}. Pass TaskResultStatus.SUCCESSFUL, "
                "TaskResultStatus.FAILED or None for both."
            )
        state = "" if status is None else str(status).lower()
        batch_size = checked_batch_size(batch_size, f"purge_finished(batch_size={batch_size!r})")
        queue = Source(self.broker, frozenset(self.queues)).known_queue(queue_name)
        return self.broker.purge(queue, state=state, batch_size=batch_size)

    def check(self, **kwargs: Any) -> list[Any]:
        return [*super().check(**kwargs), *check_backend(self)]


def _check_alias(task: Task, alias: str) -> None:
    """Refuse a task of another backend alias (``backend.enqueue_many(task, ...)`` called on
    the wrong backend): stored under ``alias``, its result and ``task.get_result(id)`` were
    looked up in the task's own backend, and not found."""
    if task.backend != alias:
        raise InvalidTask(
            f"Task {task.module_path!r} is for backend {task.backend!r}, not {alias!r}: its "
            "result would be looked up there. Enqueue it with task.enqueue(...) (or "
            f"task.get_backend()), or make it this backend's with task.using(backend={alias!r})."
        )


def _check_same_policy(task: Task, found: Task) -> None:
    """Refuse a task whose retry policy is not that of the task at its path (one given with
    ``dataclasses.replace``): a worker imports the task there and asks its policy, so the
    other one was dropped, silently."""
    given, kept = getattr(task, "retry", None), getattr(found, "retry", None)
    if given is kept or given == kept:
        return
    raise InvalidTask(
        f"Task {task.module_path!r} carries retry={given!r}, not the policy of the task at its "
        f"path (retry={kept!r}), which is the one a worker asks. Set it with @task(retry=...) "
        "where the task is declared."
    )


def _check_not_in_main(task: Task) -> None:
    """Refuse a task defined in the script or shell being run (``python script.py``,
    ``python -m``, IPython): its path, ``__main__.<name>``, imports here but names each
    worker's own command there, so it was stored and every attempt failed with
    ``TaskNotImportable``."""
    if task.func.__module__ == "__main__":
        raise InvalidTask(
            f"Task {task.module_path!r} is defined in the script or shell being run (module "
            "__main__), so no worker could run it: a worker's __main__ is its own command. "
            "Define the task in a module of your project, e.g. myapp/tasks.py, and import it "
            "from there."
        )


def _check_not_generator(task: Task) -> None:
    """Refuse a generator function, sync or async: each run returns a generator, which no
    worker can store (an async one was sent to a thread, never run, and failed every time)."""
    if inspect.isgeneratorfunction(task.func) or inspect.isasyncgenfunction(task.func):
        raise InvalidTask(
            f"Task {task.module_path!r} is a generator function: each run would return a "
            "generator, which no worker can store. Return the items instead (a list), or store "
            "them elsewhere and return their key."
        )


def _check_priority_and_run_after(task: Task) -> None:
    """Refuse the values Django's own checks would fail on with a bare ``TypeError``,
    ``ValueError`` (a NaN priority) or ``AttributeError``, let through to fail Redis's
    encoding (a bool priority), or let through to read back as another value (a run_after
    past the year 9999 in UTC)."""
    priority = task.priority
    if isinstance(priority, bool) or not isinstance(priority, int | float):
        raise InvalidTask(
            f"Task {task.module_path!r} has priority={priority!r}, {a_type(priority)}. Pass an "
            f"int from {TASK_MIN_PRIORITY} to {TASK_MAX_PRIORITY}."
        )
    if isinstance(priority, float) and math.isnan(priority):
        raise InvalidTask(
            f"Task {task.module_path!r} has priority={priority!r}, not a number. Pass an int "
            f"from {TASK_MIN_PRIORITY} to {TASK_MAX_PRIORITY}."
        )
    if task.run_after is not None and not isinstance(task.run_after, datetime):
        raise InvalidTask(
            f"Task {task.module_path!r} has run_after={task.run_after!r}, "
            f"{a_type(task.run_after)}, not a datetime. Pass one, e.g. "
            "timezone.now() + timedelta(minutes=5)."
        )
    # A time past 9999 in UTC (9999-12-31 23:00 at UTC-5) was stored, read back as no
    # run_after, and waited for ever (docs/reliability.md, Bad input: the catalogue).
    if task.run_after is not None and not reads_back(task.run_after):
        read_in = (
            "" if timezone.is_aware(task.run_after) else f" (naive: read in {naive_zone_name()})"
        )
        raise InvalidTask(
            f"Task {task.module_path!r} has run_after={task.run_after!r}{read_in}, outside the "
            "years 1 to 9999 in UTC, so it cannot be stored and read back. Pass a time within "
            "them, e.g. timezone.now() + timedelta(days=365)."
        )


def _checked_id(result_id: object) -> str:
    """Return ``result_id``, or raise: ``TypeError`` naming the fix when it is no str,
    ``TaskResultDoesNotExist`` when it cannot name a task (``looked_up_id``)."""
    task_id = looked_up_id(result_id, "task id", "TaskResult.id")
    if task_id is None:
        raise TaskResultDoesNotExist(result_id)
    return task_id
