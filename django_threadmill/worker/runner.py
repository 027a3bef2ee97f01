"""What a worker thread and the event loop lane share: the parts that run a reserved task."""

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..broker import Lease, Reservation, Start
from ..codec.times import now_ms
from .ack_writer import AckWriter, StartNow
from .buffer import TaskBuffer
from .cancelled_steps import CancelledSteps
from .executor import Executor
from .leases import HeldLeases
from .pacing import Pacer
from .role import RoleThread

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerParts:
    """The parts of a process every task runner shares."""

    buffer: TaskBuffer
    executor: Executor
    writer: AckWriter
    held: HeldLeases
    pacer: Pacer  # a rate-limited queue's task waits for its start turn
    cancelled_steps: CancelledSteps  # a step its workflow stopped does not start
    sync_ack: bool  # --sync-ack: an outcome is written before the next task
    on_task_done: Callable[[], None]  # counts toward --max-tasks and --max-memory


class TaskRunner(RoleThread):
    """A role that takes reserved tasks from the buffer, runs them and hands their outcome to
    the ack writer: a worker thread (threads.py) or the event loop lane (event_loop.py)."""

    def __init__(self, name: str, parts: RunnerParts, on_crash: Callable[[], None]) -> None:
        super().__init__(name, on_crash)
        self.buffer = parts.buffer
        self.executor = parts.executor
        self.writer = parts.writer
        self.held = parts.held
        self.pacer = parts.pacer
        self.cancelled_steps = parts.cancelled_steps
        self.sync_ack = parts.sync_ack
        self.on_task_done = parts.on_task_done

    def looks_before_start(self, reservation: Reservation) -> bool:
        """Tell whether ``admit`` asks Redis before ``reservation`` starts (a start turn, a
        workflow's status): the event loop then admits it from a thread."""
        return bool(reservation.workflow) or self.pacer.paces(reservation)

    def admit(self, reservation: Reservation) -> bool:
        """Block until ``reservation`` may start; False when it must not now: the worker
        stopped while it waited for its start turn (handed back), its turn is far off (it waits
        out of the way: worker/pacing.py), its lease was lost meanwhile, or it is a step of a
        cancelled workflow (recorded as cancelled)."""
        if self.pacer.paces(reservation):
            # Checked before each try for a turn: a turn is not spent on a task that does not
            # start (docs/schedules.md, Per-queue limits).
            return self.pacer.take_turn(reservation, self._may_start)
        return self._not_cancelled(reservation)

    def _may_start(self, reservation: Reservation) -> bool:
        """Tell whether ``reservation`` may still start: its lease is ours and its workflow did
        not stop it."""
        return self._holds(reservation.lease) and self._not_cancelled(reservation)

    def _not_cancelled(self, reservation: Reservation) -> bool:
        """Tell whether ``reservation`` may run; record it as cancelled when its workflow
        stopped it."""
        cancelled = self.cancelled_steps.cancellation(reservation)
        if cancelled is None:
            return True
        self.writer.submit_finish(cancelled, wait=self.sync_ack)
        return False

    def _holds(self, lease: Lease) -> bool:
        """Tell whether ``lease`` is still ours; say so when the lease keeper lost it, or when
        it went unrenewed for lease_ttl (then it is let go: its task goes back to READY once
        its lease lapses and a reaper runs, and never runs here beside another worker)."""
        if not self.held.holds(lease):
            logger.warning("Skipped task whose reservation was lost task_id=%s", lease.task_id)
            return False
        if self.held.may_have_lapsed(lease):
            self.held.discard([lease])
            logger.warning(
                "Skipped task whose reservation may have lapsed task_id=%s: Redis has not "
                "renewed it for lease_ttl (the process was frozen or cut off from Redis); it "
                "returns to READY once its lease lapses and a reaper runs",
                lease.task_id,
            )
            return False
        return True

    def begin(self, reservation: Reservation) -> int | None:
        """Start an attempt: return its start (ms) once its start notice is queued, or None
        if the lease keeper lost the reservation meanwhile (then it must not run)."""
        lease = reservation.lease
        if not self._holds(lease):
            return None
        started_ms = now_ms()
        start = Start(lease=lease, started_ms=started_ms)
        if self.starts_written_first(reservation):
            return self._begin_written(start)
        self.writer.submit_start(start)
        return started_ms

    def starts_written_first(self, reservation: Reservation) -> bool:
        """Tell whether ``reservation``'s start notice is written before it runs, not held:
        its last run here outlived its lease, or a reaper put it back after its holder's lease
        lapsed (``Reservation.lapsed``). Either run may have ended its holder before the held
        notice went out (a call that never let go of the GIL; a task that ended its process
        as it started, a segfault, an instant OOM kill): a reaper took it for a reservation
        never started and put it back to READY, and the task ran, and ended its process, for
        good (docs/worker.md, Leases)."""
        return reservation.lapsed or self.held.outlived(reservation.lease.task_id)

    def _begin_written(self, start: Start) -> int | None:
        """Start an attempt whose start notice is written before it runs
        (``starts_written_first``). Return its start (ms), or None if Redis refused the
        notice."""
        lease = start.lease
        written = self.writer.start_now(start)
        if written is StartNow.REFUSED:
            self.held.discard([lease])
            return None
        if written is StartNow.RECORDED:
            self.held.forget_outlived(lease.task_id)
        return start.started_ms

    def ended(self, reservation: Reservation) -> None:
        """Note an attempt's end here, before its outcome is handed over: a run that outlived
        its lease has its task's next start here written before it runs (``begin``)."""
        self.held.note_if_outlived(reservation.lease)
