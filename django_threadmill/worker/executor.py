"""Run one reserved task the way Django's ImmediateBackend would, and say how it ended."""

import asyncio
import logging
from functools import cache
from inspect import iscoroutinefunction
from typing import Any

from ..broker import Finish, Outcome, Reservation
from ..codec.records import (
    decode_payload,
    encode_result,
    error_json,
    from_ms,
    load_task,
    now_ms,
    parse_error,
    task_result,
)
from ..compat import (
    TaskContext,
    TaskResult,
    TaskResultStatus,
    task_finished,
    task_started,
)
from ..exceptions import PayloadError
from ..observability.signals import send_guarded
from ..observability.tracing import traced_execution
from ..retry import retry_delay
from .db_connections import close_stale_connections

logger = logging.getLogger(__name__)

# Asked once per task function, not once per task: the answer never changes (issue 10).
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
            enqueued_at=from_ms(reservation.enqueued_ms),
            started_at=attempted_at if first_started_ms is None else from_ms(first_started_ms),
            last_attempted_at=attempted_at,
            args=payload.get("args", []),
            kwargs=payload.get("kwargs", {}),
            backend=self.backend_alias,
            errors=[parse_error(raw) for raw in reservation.errors],
            worker_ids=[*reservation.workers, self.worker_id],
        )

    @traced_execution
    def run(self, reservation: Reservation, started_ms: int) -> Finish:
        """Run the task; any exception, SystemExit and KeyboardInterrupt included, is recorded."""
        close_stale_connections()  # per task, as Django does per request: CONN_MAX_AGE
        try:
            result = self._result(reservation, started_ms)
        except PayloadError as exc:
            logger.error("Task failed task_id=%s error=%s", reservation.lease.task_id, exc)
            return self._finish(reservation, Outcome.FAILED, error_json(exc), started_ms)
        send_guarded(task_started, self.backend_class, result)
        try:
            returned, value = encode_result(self._call(result), result.task.module_path)
        except BaseException as exc:
            return self._failed(reservation, result, exc, started_ms)
        finished_ms = now_ms()
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(result, "finished_at", from_ms(finished_ms))
        object.__setattr__(result, "_return_value", returned)
        send_guarded(task_finished, self.backend_class, result)
        logger.debug(  # -v 2: one line per task (docs/worker.md, "Verbosity")
            "Task succeeded task_id=%s path=%s duration_ms=%d",
            result.id,
            result.task.module_path,
            finished_ms - started_ms,
        )
        return self._finish(reservation, Outcome.SUCCESSFUL, value, started_ms, finished_ms)

    def _failed(
        self, reservation: Reservation, result: TaskResult, exc: BaseException, started_ms: int
    ) -> Finish:
        """Record a raised attempt: retry it if the task's policy says so, else FAILED.

        Called inside the ``except`` block, so task_finished receivers see the exception.
        """
        error = error_json(exc)
        result.errors.append(parse_error(error))
        delay = retry_delay(result.task, result, exc)
        if delay is not None:
            logger.warning(
                "Task retry scheduled task_id=%s attempt=%d delay_s=%.3f error=%s",
                result.id,
                result.attempts,
                delay.total_seconds(),
                type(exc).__name__,
            )
            return self._finish(
                reservation,
                Outcome.RETRY,
                error,
                started_ms,
                retry_delay_ms=int(delay.total_seconds() * 1000),
            )
        finished_ms = now_ms()
        object.__setattr__(result, "status", TaskResultStatus.FAILED)
        object.__setattr__(result, "finished_at", from_ms(finished_ms))
        logger.error(
            "Task failed task_id=%s path=%s error=%s: %s",
            result.id,
            result.task.module_path,
            type(exc).__name__,
            exc,
        )
        send_guarded(task_finished, self.backend_class, result)
        return self._finish(reservation, Outcome.FAILED, error, started_ms, finished_ms)

    @staticmethod
    def _finish(
        reservation: Reservation,
        outcome: Outcome,
        value: str,
        started_ms: int,
        finished_ms: int | None = None,
        retry_delay_ms: int = 0,
    ) -> Finish:
        return Finish(
            lease=reservation.lease,
            outcome=outcome,
            value=value,
            started_ms=started_ms,
            finished_ms=finished_ms or now_ms(),
            retry_delay_ms=retry_delay_ms,
        )
