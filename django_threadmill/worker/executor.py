"""Run one reserved task the way Django's ImmediateBackend would, and say how it ended.

``run`` runs a sync task in the calling worker thread; ``arun`` awaits an ``async def`` task on
the process's event loop (worker/event_loop.py). Both rebuild the attempt's ``TaskResult`` and
end it through worker/outcome.py, so signals, retries and metrics are the same in either lane.
"""

import asyncio
import logging
from typing import Any

from ..broker import Finish, Lease, Outcome, Reservation
from ..codec.payloads import decode_payload, load_task
from ..codec.results import encode_result, parse_error, task_result
from ..codec.times import from_ms, now_ms
from ..compat import TaskContext, TaskResult, TaskResultStatus, task_started
from ..exceptions import PayloadError, TaskTimeout
from ..observability.signals import asend_guarded, send_guarded
from ..observability.tracing import traced_aexecution, traced_execution
from . import outcome
from .db_connections import aclose_stale_connections, close_stale_connections

logger = logging.getLogger(__name__)


class Executor:
    """Executes tasks for one worker process's threads, and for its event loop."""

    def __init__(
        self,
        worker_id: str,
        backend_alias: str,
        backend_class: type,
        task_timeout_s: float | None = None,
    ) -> None:
        self.worker_id = worker_id
        self.backend_alias = backend_alias
        self.backend_class = backend_class
        self.task_timeout_s = task_timeout_s  # enforced here for async tasks only (cancel)

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

    def _prepared(
        self, reservation: Reservation, started_ms: int
    ) -> tuple[TaskResult, list[Any]] | Finish:
        """Return the attempt's result and call arguments, or the FAILED outcome of a task
        that cannot be rebuilt (a corrupt payload, a path that no longer imports)."""
        try:
            result = self._result(reservation, started_ms)
        except PayloadError as exc:
            logger.error("Task failed task_id=%s error=%s", reservation.lease.task_id, exc)
            return outcome.failed(reservation.lease, exc, started_ms, None)
        context: list[Any] = [TaskContext(task_result=result)] if result.task.takes_context else []
        return result, [*context, *result.args]

    @traced_execution
    def run(self, reservation: Reservation, started_ms: int) -> Finish:
        """Run a sync task; any exception, SystemExit and KeyboardInterrupt included, is
        recorded."""
        close_stale_connections()  # per task, as Django does per request: CONN_MAX_AGE
        prepared = self._prepared(reservation, started_ms)
        if isinstance(prepared, Finish):
            return prepared
        result, args = prepared
        send_guarded(task_started, self.backend_class, result)
        try:
            returned, value = encode_result(
                result.task.func(*args, **result.kwargs), result.task.module_path
            )
        except BaseException as exc:
            # Still inside the except block: task_finished receivers see the exception.
            finish = self._failed(result, exc, reservation.lease, started_ms)
            outcome.announce(self.backend_class, result, finish)
            return finish
        finish = self._succeeded(result, reservation.lease, value, started_ms)
        outcome.announce(self.backend_class, result, finish, returned)
        return finish

    @traced_aexecution
    async def arun(self, reservation: Reservation, started_ms: int) -> Finish:
        """Await an ``async def`` task on the running event loop, within ``task_timeout_s``
        (the coroutine is cancelled past it: the attempt ends FAILED with ``TaskTimeout``).

        ``CancelledError`` from outside (the loop stopping) is let through: the attempt is
        handed back unrecorded (worker/event_loop.py).
        """
        prepared = self._prepared(reservation, started_ms)
        if isinstance(prepared, Finish):
            return prepared
        result, args = prepared
        await asend_guarded(task_started, self.backend_class, result)
        try:
            returned, value = encode_result(
                await self._awaited(result, args), result.task.module_path
            )
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            finish = self._failed(result, exc, reservation.lease, started_ms)
            await outcome.aannounce(self.backend_class, result, finish)
            return finish
        finally:
            await aclose_stale_connections()  # the ORM's thread, as a request would
        finish = self._succeeded(result, reservation.lease, value, started_ms)
        await outcome.aannounce(self.backend_class, result, finish, returned)
        return finish

    async def _awaited(self, result: TaskResult, args: list[Any]) -> Any:
        """Await the task's coroutine; past the timeout it is cancelled and TaskTimeout raised."""
        try:
            async with asyncio.timeout(self.task_timeout_s):
                return await result.task.func(*args, **result.kwargs)
        except TimeoutError as exc:
            raise TaskTimeout(
                f"Task {result.id} ran longer than --task-timeout={self.task_timeout_s}s; the "
                "worker cancelled it. Make it faster or raise the timeout."
            ) from exc

    def _succeeded(self, result: TaskResult, lease: Lease, value: str, started_ms: int) -> Finish:
        finish = outcome.succeeded(lease, value, started_ms, now_ms())
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
        finish = outcome.failed(
            lease, exc, started_ms, result, retry=not isinstance(exc, TaskTimeout)
        )
        if finish.outcome is Outcome.RETRY:
            logger.warning(
                "Task retry scheduled task_id=%s attempt=%d delay_s=%.3f error=%s",
                result.id,
                result.attempts,
                finish.retry_delay_ms / 1000,
                type(exc).__name__,
            )
        else:
            logger.error(
                "Task failed task_id=%s path=%s error=%s: %s",
                result.id,
                result.task.module_path,
                type(exc).__name__,
                exc,
            )
        return finish
