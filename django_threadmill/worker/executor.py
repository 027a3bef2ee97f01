"""Run one reserved task the way Django's ImmediateBackend would, and say how it ended."""

import asyncio
import logging
from functools import cache
from inspect import iscoroutinefunction
from typing import Any

from ..broker import Finish, Lease, Outcome, Reservation
from ..codec.payloads import decode_payload, load_task
from ..codec.results import encode_result, parse_error, task_result
from ..codec.times import from_ms, now_ms
from ..compat import TaskContext, TaskResult, TaskResultStatus, task_started
from ..exceptions import PayloadError
from ..observability.signals import send_guarded
from ..observability.tracing import traced_execution
from . import outcome
from .db_connections import close_stale_connections

logger = logging.getLogger(__name__)

# Asked once per task function, not once per task: the answer never changes.
_is_coroutine_function = cache(iscoroutinefunction)


class Executor:
    """Executes tasks for one worker thread; owns that thread's asyncio event loop."""

    def __init__(self, worker_id: str, backend_alias: str, backend_class: type) -> None:
        self.worker_id = worker_id
        self.backend_alias = backend_alias
        self.backend_class = backend_class
        self._loop: asyncio.AbstractEventLoop | None = None

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def _call(self, result: TaskResult) -> Any:
        task = result.task
        args = (
            [TaskContext(task_result=result), *result.args] if task.takes_context else result.args
        )
        if _is_coroutine_function(task.func):
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(task.func(*args, **result.kwargs))
        return task.func(*args, **result.kwargs)

    def _result(self, reservation: Reservation, started_ms: int) -> TaskResult:
        """Rebuild the TaskResult of this attempt; raise PayloadError if it cannot be."""
        payload = decode_payload(reservation.payload)
        task = load_task(
            payload["path"],
            backend=self.backend_alias,
            queue=reservation.lease.queue,
            payload=payload,
        )
        attempted_at = from_ms(started_ms)
        first_started_ms = reservation.started_ms
        return task_result(
            task,
            reservation.lease.task_id,
            status=TaskResultStatus.RUNNING,
            args=payload.get("args", []),
            kwargs=payload.get("kwargs", {}),
            backend=self.backend_alias,
            enqueued_at=from_ms(reservation.enqueued_ms),
            started_at=attempted_at if first_started_ms is None else from_ms(first_started_ms),
            last_attempted_at=attempted_at,
            errors=[parse_error(raw) for raw in reservation.errors],
            worker_ids=[*reservation.workers, self.worker_id],
        )

    @traced_execution
    def run(self, reservation: Reservation, started_ms: int) -> Finish:
        """Run the task; any exception, SystemExit and KeyboardInterrupt included, is recorded."""
        close_stale_connections()  # per task, as Django does per request: CONN_MAX_AGE
        lease = reservation.lease
        try:
            result = self._result(reservation, started_ms)
        except PayloadError as exc:
            logger.error("Task failed task_id=%s error=%s", lease.task_id, exc)
            return outcome.failed(lease, exc, started_ms, None)
        send_guarded(task_started, self.backend_class, result)
        try:
            returned, value = encode_result(self._call(result), result.task.module_path)
        except BaseException as exc:
            # Still inside the except block: task_finished receivers see the exception.
            return self._failed(result, exc, lease, started_ms)
        finish = outcome.succeeded(lease, value, started_ms, now_ms())
        outcome.announce(self.backend_class, result, finish, returned)
        logger.debug(  # -v 2: one line per task (docs/worker.md, "Verbosity")
            "Task succeeded task_id=%s path=%s duration_ms=%d",
            result.id,
            result.task.module_path,
            finish.finished_ms - started_ms,
        )
        return finish

    def _failed(
        self, result: TaskResult, exc: BaseException, lease: Lease, started_ms: int
    ) -> Finish:
        """Record a raised attempt: a retry if the task's policy says so, else FAILED."""
        finish = outcome.failed(lease, exc, started_ms, result)
        if finish.outcome is Outcome.RETRY:
            logger.warning(
                "Task retry scheduled task_id=%s attempt=%d delay_s=%.3f error=%s",
                result.id,
                result.attempts,
                finish.retry_delay_ms / 1000,
                type(exc).__name__,
            )
            return finish
        logger.error(
            "Task failed task_id=%s path=%s error=%s: %s",
            result.id,
            result.task.module_path,
            type(exc).__name__,
            exc,
        )
        outcome.announce(self.backend_class, result, finish)
        return finish
