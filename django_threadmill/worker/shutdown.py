"""A worker process's stop, in the order docs/worker.md, Shutdown gives: fetching ends, the
tasks never started go back to their queues, running ones get the grace period, outcomes are
written and workflows advance, and what could not be done is said, in the log and the exit code.
"""

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from ..broker import Reservation
from ..wording import listed_values
from .crew import Crew
from .event_loop import EventLoopLane
from .exit_codes import ExitCode
from .options import WorkerOptions
from .signal_flag import SignalFlag
from .stop_calls import StopCall, join_until, start_call
from .threads import WorkerThread

# A worker process's stop logs as the process (docs/observability.md, Logging).
logger = logging.getLogger("django_threadmill.worker.process")

WRITER_MIN_FLUSH_S = 5.0  # the ack writer gets at least this long to flush at shutdown
# The stop ends this long after the grace period at the latest, whatever Redis does: the ack
# writer's flush, then its second chance (docs/deploy.md, Kubernetes, "Stopping").
STOP_MARGIN_S = 2 * WRITER_MIN_FLUSH_S
# How long a recycled process waits, still renewing, for the supervisor to say its replacement
# counts (worker/control.py, REPLACED) before it signs off.
REPLACEMENT_WAIT_S = 5.0
RECYCLE_LOOK_S = 0.1  # how often a recycling process looks whether its running tasks ended
# Why a stop left work to the reaper: Redis did not answer in time, or it refused this worker
# (its rights, or the confirmation OPTIONS['durability'] asks for), which was said to be a Redis
# too slow, whose fix is to wait (docs/worker.md, Shutdown).
LEFT_UNANSWERED = (
    "Redis did not take them in time, or an acquire's tasks did not reach the buffer: Redis did "
    "not answer it, or a task module's import hung; nobody hands those back, and the reaper "
    "settles them once their leases lapse: docs/worker.md, Shutdown"
)
LEFT_REFUSED = (
    "Redis refused this worker, which no wait fixes: the CRITICAL line above names the refusal "
    "and its fix; counted unwritten are the batches it refused, applied without their "
    "confirmation or not at all (the ERROR lines above name them), and the reaper settles what "
    "Redis did not record once its leases lapse: docs/worker.md, Shutdown"
)


class StoppingProcess(Protocol):
    """What a stop reads and sets of the worker process it stops (worker/process.py)."""

    options: WorkerOptions
    crew: Crew
    worker_id: str
    exit_code: ExitCode
    stop_asked: SignalFlag  # a signal, the supervisor, --burst or a failure asked for the stop
    replaced: SignalFlag  # the supervisor said REPLACED: a recycle's replacement counts
    loop_given_up: threading.Event  # a task held the event loop past --task-timeout

    @property
    def recycling(self) -> bool: ...

    @property
    def supervised(self) -> bool: ...

    @property
    def finished_count(self) -> int: ...

    def wait(
        self, timeout_s: float | None = None, until: Callable[[], bool] | None = None
    ) -> None: ...

    def crashed(self) -> None: ...

    def release(self, unstarted: list[Reservation]) -> bool: ...


class Shutdown:
    """One stop of ``process``, within --grace-period + STOP_MARGIN_S whatever Redis does:
    every join shares one deadline, and a thread still waiting for Redis at the end is left
    behind (the process exits without it)."""

    def __init__(self, process: StoppingProcess) -> None:
        self.process = process
        self.crew = process.crew
        self.options = process.options

    def run(self) -> None:
        """Stop every role of the process, in order; set its exit code to what was left."""
        process, crew = self.process, self.crew
        deadline = time.monotonic() + self.options.grace_period_s
        end = deadline + STOP_MARGIN_S
        if crew.sizing is not None:  # no thread added or retired from now
            crew.sizing.stop()
            join_until(crew.sizing, end)
        if crew.watchdog is not None:  # it still times tasks out in the grace period
            crew.watchdog.replacing = False
        # 1. Stop fetching, so nothing new is reserved while we hand work back. The wake token
        # and the release go through Redis: each in a thread of its own, so that a Redis that
        # does not answer cannot hold the stop (worker/stop_calls.py).
        crew.drainer.wind_down()
        waking = start_call("wake", crew.prefetcher.stop, process.crashed)
        join_until(waking, deadline)
        join_until(crew.prefetcher, deadline)
        # 2. Release reserved, never-started tasks to their queues, in their original place
        # (those waiting for a rate-limited queue's start turn too).
        crew.pacer.stop()
        crew.lane.stop()
        unstarted = crew.buffer.close()
        releasing = start_call("release", partial(process.release, unstarted), process.crashed)
        # An acquire still on its way puts its tasks in the closed buffer, which keeps them: a
        # call of its own releases them once the prefetcher has ended, never holding the stop.
        late: list[Reservation] = []
        releasing_late = start_call(
            "release-late", partial(self.release_late, late), process.crashed
        )
        join_until(releasing, deadline)
        # 3. Let running tasks finish, bounded by the grace period; then the event loop
        # cancels what it still runs (handed back: leases lapse, the reaper settles them). A
        # recycle's grace period starts once they ended, or once a stop is asked for.
        if not process.stop_asked.is_set():
            self._let_running_finish()
            deadline = time.monotonic() + self.options.grace_period_s
            end = deadline + STOP_MARGIN_S
        self._say_what_runs()
        # Threads between tasks are waited for past the grace period, short of the ack
        # writer's flush time: one that took a task just as the buffer closed, before it
        # said so, runs it that long at most.
        crew.pool.join(deadline, max(deadline, end - WRITER_MIN_FLUSH_S))
        self._record_decided()
        if crew.watchdog is not None:  # before the flush: what it timed out is written
            crew.watchdog.stop()
            join_until(crew.watchdog, end)
        crew.lane.finish_running(deadline)
        join_until(crew.lane, min(time.monotonic() + WRITER_MIN_FLUSH_S, end))
        # A runner that took a task unsorted as the buffer closed hands it back there once its
        # module is imported (TaskBuffer.sort), maybe after the late release looked: released
        # as those are, once the runners were waited for.
        handed_back: list[Reservation] = []
        releasing_handed_back = start_call(
            "release-handed-back", partial(self.release_kept, handed_back), process.crashed
        )
        crew.monitor.stop()
        join_until(crew.monitor, end)
        # 4. The ack writer drains and flushes; the lease keeper renews until it is done.
        self._flush(deadline, end)
        # 5. Workflows advance from the last outcomes written (their entries would otherwise
        # wait for the reaper or another worker).
        crew.drainer.stop()
        join_until(crew.drainer, _flush_until(deadline, end))
        self._wait_for_replacement(end)
        crew.keeper.stop()
        releases = [releasing, releasing_late, releasing_handed_back]
        for last in (crew.keeper, crew.prefetcher, waking, *releases):
            join_until(last, end)
        # Tasks put in the closed buffer count too until a late release took them.
        late_count = len(late) + len(handed_back) + crew.buffer.kept_after_close()
        unreleased = (0 if releasing.result else len(unstarted)) + late_count
        self._report_left_behind(unreleased, [waking, *releases])
        logger.info(
            "Worker process stopped worker_id=%s finished=%d exit_code=%d",
            process.worker_id,
            process.finished_count,
            process.exit_code,
        )

    def running(self) -> int:
        """How many tasks run now, in worker threads and on the event loop."""
        return sum(t.busy for t in self.crew.pool.joinable()) + len(self.crew.lane.running)

    def release_late(self, late: list[Reservation]) -> bool:
        """Once the prefetcher has ended, hand back what it put in the buffer after the stop
        closed it (``release_kept``).

        It waits for the prefetcher without a bound of its own: the stop waits for it until the
        stop's own end (a recycle's comes once its running tasks ended), then exits without it.
        Made by the stop itself (the system refused its thread), it waits for nothing."""
        if isinstance(threading.current_thread(), StopCall):
            join_until(self.crew.prefetcher, None)
        return self.release_kept(late)

    def release_kept(self, left: list[Reservation]) -> bool:
        """Hand back what the closed buffer kept, gathered into ``left``, which holds those not
        released yet (the stop counts them); False if Redis did not take them."""
        left.extend(self.crew.buffer.close())
        if not self.process.release(left):
            return False
        left.clear()
        return True

    def _record_decided(self) -> None:
        """Hand the ack writer the outcomes of tasks that ended, their threads still in their
        ``task_finished`` receivers past the grace period: a task that ran is recorded as it
        ended, not left to the reaper (docs/worker.md, Shutdown)."""
        for thread in self.crew.pool.joinable():
            if thread.is_alive() and (finish := thread.take_decided()) is not None:
                self.crew.writer.submit_finish(finish)

    def _wait_for_replacement(self, end: float) -> None:
        """Hold a recycle's sign-off until the supervisor says the replacement counts
        (REPLACED), the lease keeper renewing meanwhile; at most REPLACEMENT_WAIT_S, and never
        when a stop was asked for. Signed off first, the host had no process counted between
        the two, for as long as the replacement took to start, and threadmill_health exited 1
        for a worker that only recycled (docs/deploy.md, Health)."""
        process = self.process
        if not process.recycling or not process.supervised:
            return
        if process.replaced.is_set() or process.stop_asked.is_set():
            return
        wait_s = min(REPLACEMENT_WAIT_S, end - WRITER_MIN_FLUSH_S - time.monotonic())
        if wait_s <= 0:
            return
        logger.info(
            "Recycled, signing off once the replacement renews worker_id=%s (at most %.1fs)",
            process.worker_id,
            wait_s,
        )
        process.wait(wait_s, until=lambda: process.replaced.is_set() or process.stop_asked.is_set())

    def _flush(self, deadline: float, end: float) -> None:
        """Let the ack writer write what it holds, then give it a second chance with retries
        given up (a batch that fails is dropped); both end by ``end``."""
        writer = self.crew.writer
        writer.stop()
        join_until(writer, _flush_until(deadline, end))
        if writer.is_alive():
            writer.give_up_now()
            join_until(writer, end)

    def _let_running_finish(self) -> None:
        """Wait, for a recycle, until the tasks running now have ended, however long they take:
        nothing outside waits for the process to go, and --grace-period would cut them short
        (run again or failed by the reaper). A signal or the supervisor's stop ends the wait;
        the event loop's tasks are not waited for once it was given up on (--task-timeout)."""
        process, crew = self.process, self.crew
        if running := self.running():
            logger.info(
                "Recycling once %d running task%s finish worker_id=%s",
                running,
                "" if running == 1 else "s",
                process.worker_id,
            )
        while not (
            process.stop_asked.is_set()
            or (crew.pool.settled() and (process.loop_given_up.is_set() or not crew.lane.running))
        ):
            process.wait(RECYCLE_LOOK_S, until=process.stop_asked.is_set)

    def _say_what_runs(self) -> None:
        """Say what the stop waits for, and how to cut it short (a second signal)."""
        running = self.running()
        if running:
            logger.info(
                "Waiting up to %gs for %d running task%s to finish; a second signal stops at "
                "once (Ctrl-C again) worker_id=%s",
                self.options.grace_period_s,
                running,
                "" if running == 1 else "s",
                self.process.worker_id,
            )

    def _report_left_behind(self, unreleased: int, calls: list[StopCall[Any]]) -> None:
        """Name the threads the stop ends without, and say in the exit code what that left to
        the reaper (docs/worker.md, Exit codes): outcomes not written, tasks not handed back,
        and an acquire Redis has not answered, which may have reserved tasks that reach no
        buffer."""
        process, crew = self.process, self.crew
        waiting = [crew.prefetcher, crew.writer, crew.monitor, crew.drainer, crew.keeper, *calls]
        left = [thread.name for thread in waiting if thread.is_alive()]
        if left:
            logger.warning(
                "Stop deadline passed, exiting without threads names=%s (they wait for Redis, "
                "which did not answer in time)",
                ",".join(left),
            )
        unwritten = crew.writer.unwritten()
        acquiring = crew.prefetcher.acquiring
        if unwritten or unreleased or acquiring:
            logger.error(
                "Stopped with work left to the reaper unwritten=%d unreleased=%d "
                "acquire_unanswered=%s worker_id=%s (%s)",
                unwritten,
                unreleased,
                acquiring,
                process.worker_id,
                LEFT_REFUSED if process.exit_code == ExitCode.REFUSED else LEFT_UNANSWERED,
            )
            if process.exit_code in (ExitCode.OK, ExitCode.RECYCLE):
                process.exit_code = ExitCode.DROPPED
        runners: list[WorkerThread | EventLoopLane] = [*crew.pool.joinable(), crew.lane]
        running = [thread for thread in runners if thread.is_alive()]
        if running:
            held = [task for thread in running for task in _running_tasks(thread)]
            logger.error(
                "Threads still running after the grace period names=%s tasks=%s (their leases "
                "will expire and the reaper settles them)",
                listed_values([thread.name for thread in running]),
                listed_values([f"{task.lease.task_id}:{task.lease.task_path}" for task in held])
                or "none",
            )
        if running or crew.lane.handed_back:  # cancelled coroutines are handed back as well
            process.exit_code = ExitCode.FORCED


def _running_tasks(thread: WorkerThread | EventLoopLane) -> list[Reservation]:
    """Return the tasks ``thread`` runs now: the event loop's, the one whose code holds it, or
    else those it has in flight (coroutines that ignored the grace period's cancel)."""
    if isinstance(thread, WorkerThread):
        task = thread.current_task()
        return [] if task is None else [task]
    blocked = thread.blocked_task()
    return thread.in_flight() if blocked is None else [blocked]


def _flush_until(deadline: float, end: float) -> float:
    """Return when a flush that starts now ends: WRITER_MIN_FLUSH_S from now, or the grace
    period's ``deadline`` if later; never past the stop's ``end``."""
    return min(max(time.monotonic() + WRITER_MIN_FLUSH_S, deadline), end)
