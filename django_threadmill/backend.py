"""ThreadmillTaskBackend: the django.tasks API on top of the broker, and nothing else."""

from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import cached_property, partial
from itertools import repeat
from threading import Lock
from typing import Any

from .broker import Broker, Guard, GuardKind, NewTask
from .broker.keys import make_task_id, queue_of
from .codec.records import (
    STATUS_OF_STATE,
    build_result,
    decode_payload,
    encode_payload,
    error_json,
    load_task,
    new_result,
    new_task_hex,
    now_ms,
    to_ms,
)
from .compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
)
from .conf.settings import BackendSettings, check_queue_name, read_settings
from .enqueue.announce import announce, announcer
from .enqueue.coalesce import Enqueuer
from .enqueue.on_commit import defer_to_commit
from .enqueue.unique import unique_guard
from .exceptions import Cancelled, ImproperlyConfiguredThreadmill
from .observability.tracing import carrier, traced_aenqueue, traced_enqueue
from .task import ThreadmillTask

VALID_TASKS_KEPT = 1024  # tasks remembered as valid per backend; more start the set again
_enqueuers: dict[tuple[type, str], Enqueuer] = {}
_enqueuers_lock = Lock()


def enqueuer_for(backend_class: type, settings: BackendSettings) -> Enqueuer:
    """Return the process-wide enqueuer (and broker) for ``settings``, shared by threads.

    Django builds one backend per thread; sharing keeps one connection pool per process and
    lets the enqueues of every thread share round trips.
    """
    key = (backend_class, repr(settings))
    with _enqueuers_lock:
        if key not in _enqueuers:
            _enqueuers[key] = Enqueuer(Broker(settings), announcer(backend_class))
        return _enqueuers[key]


class ThreadmillTaskBackend(BaseTaskBackend):
    """Store tasks in Redis for ``manage.py threadmill_worker`` to run."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True
    task_class = ThreadmillTask

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.settings = read_settings(alias, params)
        self._valid_tasks: dict[int, Task] = {}
        for queue in [*self.queues, *self.settings.queue_limits, *self.settings.queue_shards]:
            check_queue_name(queue)

    @cached_property
    def enqueuer(self) -> Enqueuer:
        """The shared enqueuer: coalesces concurrent enqueues of this process."""
        return enqueuer_for(type(self), self.settings)

    @property
    def broker(self) -> Broker:
        """The shared broker; it connects on first use, never at import time."""
        return self.enqueuer.broker

    def _on_commit(self, task: Task) -> bool:
        """Tell whether ``task`` waits for the commit: its own choice, else OPTIONS."""
        choice = getattr(task, "enqueue_on_commit", None)
        return self.settings.enqueue_on_commit if choice is None else bool(choice)

    def validate_task(self, task: Task) -> None:
        """Refuse a task this backend cannot run; a task found valid once is not checked again.

        Tasks are immutable and mostly enqueued many times, and checking one was a tenth of an
        enqueue (issue 11). One with ``run_after`` is checked each time: that check reads
        USE_TZ, and such a task is usually made for one call.
        """
        if self._valid_tasks.get(id(task)) is task:
            return
        super().validate_task(task)
        try:
            check_queue_name(task.queue_name)
        except ImproperlyConfiguredThreadmill as exc:
            raise InvalidTask(str(exc)) from exc
        if task.run_after is None:
            if len(self._valid_tasks) >= VALID_TASKS_KEPT:
                self._valid_tasks.clear()
            # Keyed by id, holding the task: the id stays its own while it is kept here.
            self._valid_tasks[id(task)] = task

    def _prepare(
        self,
        task: Task,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        *,
        task_id: str | None = None,
        guard: Guard | None = None,
    ) -> tuple[NewTask, TaskResult]:
        """Validate and encode one enqueue; raise before anything reaches Redis."""
        self.validate_task(task)
        given_id, task_id = task_id, task_id or make_task_id(new_task_hex(), task.queue_name)
        enqueued_ms = now_ms()
        run_after_ms = None if task.run_after is None else to_ms(task.run_after)
        try:
            result = new_result(task, task_id, enqueued_ms, args, kwargs, self.alias)
            payload = encode_payload(task, result.args, result.kwargs, run_after_ms, carrier())
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"Arguments of task {task.module_path!r} cannot be stored as JSON ({exc}). "
                "Pass strings, numbers, booleans, None, lists and dicts with string keys only."
            ) from exc
        except RecursionError as exc:
            raise TypeError(
                f"Arguments of task {task.module_path!r} are nested too deeply to store as JSON. "
                "Flatten them, or store the data elsewhere and pass its key."
            ) from exc
        if len(payload) > self.settings.max_payload_bytes:
            raise ValueError(
                f"Task {task.module_path!r} payload is {len(payload)} bytes, above "
                f"max_payload_bytes={self.settings.max_payload_bytes}. Store large data "
                "elsewhere (a file or a model) and pass its key, or raise OPTIONS"
                "['max_payload_bytes']."
            )
        guard = guard or unique_guard(task, result.args, result.kwargs)
        routed_id = None if given_id else self._unique_task_id(task.queue_name, guard)
        if routed_id is not None:
            task_id, result = routed_id, replace(result, id=routed_id)
        return NewTask(
            id=task_id,
            payload=payload,
            priority=task.priority,
            run_after_ms=run_after_ms,
            enqueued_ms=enqueued_ms,
            guard=guard,
        ), result

    def _unique_task_id(self, queue: str, guard: Guard | None) -> str | None:
        """Return a new id in the shard of a unique task's digest; None if it need not move.

        Uniqueness is checked within the shard a task's id lands in, so equal unique tasks on
        a sharded queue must meet in one shard (keys.routed_task_id). The digest is known only
        once the arguments are validated, so this id replaces the first one.
        """
        if guard is None or guard.kind is not GuardKind.UNIQUE:
            return None
        if self.settings.shards_of(queue) == 1:
            return None
        ids = (make_task_id(new_task_hex(), queue) for _ in repeat(None))
        return self.broker.routed_id(queue, ids, guard.name)

    @traced_enqueue
    def enqueue(self, task: Task, args: Sequence[Any], kwargs: dict[str, Any]) -> TaskResult:
        """Queue up the Task to be executed: one Redis call, shared with concurrent callers.

        With ``enqueue_on_commit``, inside a transaction the write waits for its commit. A
        unique task equal to an unfinished one returns that task's result and stores nothing.
        """
        new, result = self._prepare(task, args, kwargs)
        write = partial(self._store, [(new, result)])
        if self._on_commit(task) and defer_to_commit(write):
            return result
        [holder] = write()
        return result if holder is None else self.get_result(holder)

    @traced_aenqueue
    async def aenqueue(self, task: Task, args: Sequence[Any], kwargs: dict[str, Any]) -> TaskResult:
        """Queue up the Task to be executed, on the asyncio client (no thread hop).

        Django refuses atomic() in async code, so this writes at once unless a project entered
        one anyway (DJANGO_ALLOW_ASYNC_UNSAFE): then, with enqueue_on_commit, it waits for it.
        """
        new, result = self._prepare(task, args, kwargs)
        if self._on_commit(task) and defer_to_commit(partial(self._store, [(new, result)])):
            return result
        holder = await self.enqueuer.aenqueue(task.queue_name, new, result)
        return result if holder is None else await self.aget_result(holder)

    def enqueue_guarded(
        self, task: Task, args: Sequence[Any], kwargs: dict[str, Any], *, task_id: str, guard: Guard
    ) -> TaskResult | None:
        """Queue up the Task under a given id and guard; return None if the script skipped it.

        Schedules use it (docs/schedules.md): the id derives from the slot, and the guard makes
        the script skip a slot at or before the last one fired.
        """
        new, result = self._prepare(task, args, kwargs, task_id=task_id, guard=guard)
        if not self.broker.enqueue(task.queue_name, [new]).stored:
            return None
        announce(type(self), result)
        return result

    @traced_enqueue
    def enqueue_many(
        self, task: Task, calls: Iterable[tuple[Sequence[Any], dict[str, Any]]]
    ) -> list[TaskResult]:
        """Queue up many calls of one task in one atomic script call: all are stored, or none.

        Every call is validated and encoded before anything is sent.
        """
        prepared = [self._prepare(task, args, kwargs) for args, kwargs in calls]
        if not prepared:
            return []
        write = partial(self._store, prepared)
        if self._on_commit(task) and defer_to_commit(write):
            return [result for _, result in prepared]
        holders = write()
        existing = {holder: self.get_result(holder) for holder in set(holders) if holder}
        return [
            result if holder is None else existing[holder]
            for (_, result), holder in zip(prepared, holders, strict=True)
        ]

    def _store(self, prepared: Sequence[tuple[NewTask, TaskResult]]) -> list[str | None]:
        """Write prepared tasks of one queue (coalesced when alone), then send task_enqueued
        for those stored; return, per task, the id of the unfinished task it duplicates."""
        if len(prepared) == 1:
            [(new, result)] = prepared
            holders = [self.enqueuer.enqueue(result.task.queue_name, new)]
        else:
            queue = prepared[0][1].task.queue_name
            existing = self.broker.enqueue(queue, [new for new, _ in prepared]).existing
            holders = [existing.get(new.id) for new, _ in prepared]
        for (_, result), holder in zip(prepared, holders, strict=True):
            if holder is None:
                announce(type(self), result)
        return holders

    def _result(self, result_id: str, record: dict[str, str] | None) -> TaskResult:
        if record is None:
            raise TaskResultDoesNotExist(result_id)
        payload = decode_payload(record.get("payload"))
        task = load_task(
            payload["path"],
            backend=self.alias,
            queue=queue_of(result_id) or "",
            payload=payload,
        )
        return build_result(
            task,
            task_id=result_id,
            status=STATUS_OF_STATE.get(record.get("state", ""), TaskResultStatus.READY),
            payload=payload,
            record=record,
        )

    def get_result(self, result_id: str) -> TaskResult:
        """Return the result of ``result_id`` in any state, until result_ttl after it finished."""
        return self._result(result_id, self.broker.record(result_id))

    async def aget_result(self, result_id: str) -> TaskResult:
        """Async twin of ``get_result``, on the asyncio client."""
        return self._result(result_id, await self.broker.arecord(result_id))

    # Lifecycle (issue 4): fenced by state in the broker scripts, used by the admin. ---------

    def cancel(self, result_id: str, reason: str = "") -> bool:
        """Fail a READY (or delayed) task with a ``Cancelled`` error so it never runs.

        Return False, changing nothing, if the task is reserved, running or finished.
        Raise ``TaskResultDoesNotExist`` for an unknown id.
        """
        message = "Cancelled before it ran" + (f": {reason}" if reason else ".")
        state = self.broker.cancel(result_id, error_json(Cancelled(message)), now_ms())
        if state == "missing":
            raise TaskResultDoesNotExist(result_id)
        return state == "cancelled"

    def requeue(self, result_id: str) -> bool:
        """Give a FAILED task a new attempt: same id, errors and worker ids kept.

        Return False, changing nothing, if the task has not failed (waiting, running, or
        successful). Raise ``TaskResultDoesNotExist`` for an unknown or expired id.
        """
        state = self.broker.requeue(result_id)
        if state == "missing":
            raise TaskResultDoesNotExist(result_id)
        return state == "requeued"

    def purge_finished(
        self, queue_name: str, status: TaskResultStatus | None = None, *, batch_size: int = 500
    ) -> int:
        """Delete the finished results of ``queue_name`` (SUCCESSFUL, FAILED, or both).

        Waiting and running tasks are never touched. Return how many results were deleted.
        """
        if status not in (None, TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED):
            raise ValueError(
                f"purge_finished(status={status!r}) cannot purge unfinished tasks. Pass "
                "TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED or None for both."
            )
        state = "" if status is None else str(status).lower()
        return self.broker.purge(check_queue_name(queue_name), state=state, batch_size=batch_size)

    def check(self, **kwargs: Any) -> list[Any]:
        from .checks import check_backend

        return [*super().check(**kwargs), *check_backend(self)]
