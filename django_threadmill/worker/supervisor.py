"""The supervisor: starts worker processes, restarts the ones that die, relays stop requests."""

import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..exceptions import BrokerUnavailable
from ..schedules.scheduler import Scheduler
from .backoff import RESTART_BACKOFF
from .exit_codes import ExitCode
from .options import WorkerOptions
from .process import STOP, STOP_SIGNALS, WorkerProcess
from .reaper import reap_once
from .wakeup import WakeupPipe

logger = logging.getLogger(__name__)

FAST_FAILURE_S = 10.0  # a process that dies this soon after start counts as failing at start
MAX_FAST_FAILURES = 5  # consecutive fast failures before the supervisor gives up
SCHEDULE_RETRY_S = 1.0  # wait before firing schedules again after Redis failed


def run_worker_process(
    options: WorkerOptions, control_fd: int, supervisor_fds: tuple[int, ...] = ()
) -> None:
    """Entry point of a forked worker process.

    It starts with SIGTERM and SIGINT blocked (``_stop_signals_blocked``): WorkerProcess.run
    unblocks them once its own handlers are set.
    """
    # Close the supervisor's ends of the control pipes that fork handed down: otherwise this
    # process holds its own pipe open, never reads EOF when the supervisor dies, and lives on
    # as an orphan.
    for fd in supervisor_fds:
        os.close(fd)
    code = WorkerProcess(options, threadmill_backend(options.backend_alias)).run(control_fd)
    logging.shutdown()
    os._exit(code)  # threads that outlived the grace period must not hold the exit


@contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Hold SIGTERM and SIGINT back while a worker process is forked.

    The child starts with them blocked and unblocks them once its own handlers are set
    (WorkerProcess.run), so one sent to it in between waits for them. Until then it has the
    supervisor's handler, handed down by the fork, which stops nothing there: such a SIGTERM
    was lost and the process ran on. The supervisor gets its own once the fork is done.
    """
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@dataclass(slots=True)
class _Slot:
    """One of the N process slots: the process in it and its restart bookkeeping."""

    index: int
    process: BaseProcess | None = None
    control_fd: int | None = None
    started_at: float = 0.0
    crashes: int = 0
    restart_at: float | None = None
    done: bool = False


class Supervisor:
    """Keep ``options.processes`` worker processes running until told to stop."""

    def __init__(self, options: WorkerOptions, backend: ThreadmillTaskBackend) -> None:
        self.options = options
        self.backend = backend
        self.context = multiprocessing.get_context("fork")
        self.slots = [_Slot(index) for index in range(options.processes)]
        self.signals = 0
        self._relayed = 0  # the signals acted on
        self._on_redis = False  # True while the main thread waits on Redis (reaps, schedules)
        self.exit_code = ExitCode.OK
        self.next_reap = time.monotonic()
        self.scheduler = Scheduler(backend.pipeline) if backend.settings.schedules else None
        self.next_schedule: float | None = time.monotonic() if self.scheduler else None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1  # the signal woke the main thread already: through its pipe
        if self._on_redis:
            # The loop acts once the call returns, which a silent Redis holds for the socket
            # timeout; the processes are told now (the call leaves the slots alone meanwhile).
            self._act_on_signals()

    def _act_on_signals(self) -> None:
        """Relay the first stop signal not acted on yet; kill at the second."""
        if self.signals > self._relayed:
            self._relayed = self.signals
            self._relay() if self.signals == 1 else self._kill()

    @contextmanager
    def _waiting_on_redis(self) -> Iterator[None]:
        """Mark a call to Redis from the main thread: a signal meanwhile is relayed at once."""
        self._on_redis = True
        try:
            yield
        finally:
            self._on_redis = False

    def run(self) -> ExitCode:
        wakeup = WakeupPipe()
        try:
            return self._supervise(wakeup)
        finally:
            wakeup.close()

    def _supervise(self, wakeup: WakeupPipe) -> ExitCode:
        wakeup.install()  # before the handlers: every signal they count writes to the pipe
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        logger.info(
            "Supervisor started pid=%d processes=%d backend=%s",
            os.getpid(),
            self.options.processes,
            self.options.backend_alias,
        )
        # The first pass before the processes start: a reap pass advances workflows too, and
        # beside a --burst just started it could enqueue a step the burst has already looked
        # past, ending the burst with the workflow still running.
        self._reap_if_due()
        self._fire_schedules_if_due()
        for slot in self.slots:
            if not self.signals:  # stopped during the first pass: nothing to start
                self._spawn(slot)
        while not all(slot.done for slot in self.slots):
            self._wait_for_event(wakeup)
            self._act_on_signals()
            self._collect_exits()
            self._restart_due()
            self._reap_if_due()
            self._fire_schedules_if_due()
        logger.info("Supervisor stopped exit_code=%d", self.exit_code)
        return self.exit_code

    def run_in_process(self) -> ExitCode:
        """Run one worker process's loop in this process, with no fork (``--processes 0``).

        Only with ``--burst``: nothing restarts the worker here, so it runs until the queues
        are empty. The supervisor's first pass comes first, as with processes: a reap pass and
        the schedules' due slots. The signal handlers the worker sets are put
        back after it, for a caller that goes on (``call_command``).
        """
        self._reap_if_due()
        self._fire_schedules_if_due()
        handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            return WorkerProcess(self.options, self.backend).run()
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)

    def _spawn(self, slot: _Slot) -> None:
        read_fd, write_fd = os.pipe()
        held = tuple(other.control_fd for other in self.slots if other.control_fd is not None)
        process = self.context.Process(
            target=run_worker_process,
            args=(self.options, read_fd, (write_fd, *held)),
            name=f"threadmill-process-{slot.index}",
        )
        with _stop_signals_blocked():
            process.start()
        os.close(read_fd)
        slot.process, slot.control_fd = process, write_fd
        slot.started_at, slot.restart_at = time.monotonic(), None
        logger.info("Worker process spawned slot=%d pid=%s", slot.index, process.pid)

    def _relay(self) -> None:
        """Tell every live process to stop gracefully (the first signal)."""
        logger.info("Stopping worker processes count=%d", self._live_count())
        for slot in self.slots:
            if slot.control_fd is not None:
                with suppress(OSError):  # already gone: _collect_exits will see it
                    os.write(slot.control_fd, STOP)
            if slot.process is None:
                slot.done = True

    def _kill(self) -> None:
        """Kill every live process at once (a second signal); the reaper settles their leases."""
        logger.warning("Second signal: killing worker processes count=%d", self._live_count())
        self.exit_code = ExitCode.FORCED
        for slot in self.slots:
            if slot.process is not None:
                slot.process.kill()

    def _live_count(self) -> int:
        return sum(1 for slot in self.slots if slot.process is not None)

    def _wait_for_event(self, wakeup: WakeupPipe) -> None:
        """Sleep until a process exits, a signal arrives, a restart or a reap is due."""
        sentinels = [slot.process.sentinel for slot in self.slots if slot.process is not None]
        timers: list[float] = []
        # Once stopping, nothing is restarted, reaped or fired: a timer of theirs that fell due
        # would wake this loop at once, again and again, for the whole grace period.
        if not self.signals:
            timers += [slot.restart_at for slot in self.slots if slot.restart_at is not None]
            if self.options.reap_interval_s:
                timers.append(self.next_reap)
            if self.next_schedule is not None:
                timers.append(self.next_schedule)
        timeout = max(0.0, min(timers) - time.monotonic()) if timers else None
        if wakeup.read_fd in wait([*sentinels, wakeup.read_fd], timeout):
            wakeup.drain()

    def _collect_exits(self) -> None:
        stopping = self.signals > 0
        for slot in self.slots:
            process = slot.process
            if process is None or process.is_alive():
                continue
            process.join()
            code = process.exitcode
            os.close(slot.control_fd)  # type: ignore[arg-type]
            slot.process, slot.control_fd = None, None
            if stopping or (self.options.burst and code in (ExitCode.OK, ExitCode.DROPPED)):
                slot.done = True
                if code not in (ExitCode.OK, ExitCode.RECYCLE):
                    self.exit_code = self.exit_code or _stopped_with(code)
                continue
            if code == ExitCode.REFUSED:  # the process logged why; every other one would too
                self._stop_all(slot, ExitCode.REFUSED)
                continue
            if code == ExitCode.RECYCLE:
                logger.info("Worker process recycled slot=%d pid=%s", slot.index, process.pid)
                slot.crashes = 0
                self._spawn(slot)
                continue
            if code in (ExitCode.OK, ExitCode.DROPPED):
                self._replace_stopped(slot, process, code)
                continue
            if self.options.burst:
                # What the dead process held stays leased until the reaper settles it, after
                # the burst: the queues may look empty, but the burst did not run them all.
                self.exit_code = self.exit_code or ExitCode.CRASHED
            self._schedule_restart(slot, process, code)

    def _replace_stopped(self, slot: _Slot, process: BaseProcess, code: int) -> None:
        """Start a fresh process in place of one asked to stop by something other than this
        supervisor (a SIGTERM sent to its pid), or one that stopped (asked, or recycled) with
        work left to the reaper (DROPPED): a stop, not a crash, so it is not counted toward
        giving up. Warned, as the supervisor did not ask for it."""
        logger.warning(
            "Worker process stopped slot=%d pid=%s status=exit code %d (%s); starting a fresh one",
            slot.index,
            process.pid,
            code,
            "asked directly, such as by SIGTERM to its pid, not through the supervisor"
            if code == ExitCode.OK
            else "Redis did not take its last writes in time: the reaper settles what it held",
        )
        self._spawn(slot)

    def _schedule_restart(self, slot: _Slot, process: BaseProcess, code: int | None) -> None:
        """Restart a dead process with backoff; give up if processes keep dying at start."""
        fast = time.monotonic() - slot.started_at < FAST_FAILURE_S
        slot.crashes = slot.crashes + 1 if fast else 1
        status = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        if slot.crashes >= MAX_FAST_FAILURES:
            logger.critical(
                "Worker processes keep dying at start slot=%d status=%s crashes=%d; giving up. "
                "Check the log lines above for the cause (settings, imports, Redis).",
                slot.index,
                status,
                slot.crashes,
            )
            self._stop_all(slot, ExitCode.GAVE_UP)
            return
        delay = RESTART_BACKOFF.after(slot.crashes)
        logger.error(
            "Worker process died slot=%d pid=%s status=%s restart_in_s=%.1f",
            slot.index,
            process.pid,
            status,
            delay,
        )
        slot.restart_at = time.monotonic() + delay

    def _stop_all(self, slot: _Slot, exit_code: ExitCode) -> None:
        """Stop every process and exit with ``exit_code``, as if signalled."""
        self.exit_code = exit_code
        self.signals = max(self.signals, 1)
        slot.done = True
        self._relay()

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.restart_at is not None and slot.restart_at <= now and not self.signals:
                self._spawn(slot)

    def _reap_if_due(self) -> None:
        """Settle expired leases now and then, so a deployment without threadmill_reap is safe."""
        interval = self.options.reap_interval_s
        if not interval or time.monotonic() < self.next_reap or self.signals:
            return
        self.next_reap = time.monotonic() + interval
        try:
            with self._waiting_on_redis():
                reap_once(self.backend)
        except BrokerUnavailable as exc:
            logger.warning("Reap pass failed error=%s", exc)

    def _fire_schedules_if_due(self) -> None:
        """Enqueue the schedules' due slots: every supervisor may, each slot is stored once."""
        due = self.next_schedule
        if self.scheduler is None or due is None or time.monotonic() < due or self.signals:
            return
        try:
            with self._waiting_on_redis():
                wait = self.scheduler.fire_due()
        except BrokerUnavailable as exc:
            logger.warning("Schedules not fired retry_in_s=%.1f error=%s", SCHEDULE_RETRY_S, exc)
            self.next_schedule = time.monotonic() + SCHEDULE_RETRY_S
            return
        self.next_schedule = None if wait is None else time.monotonic() + wait.total_seconds()


def _stopped_with(code: int | None) -> ExitCode:
    """Return the command's exit code for a process that ended with ``code`` while it stopped:
    work left to the reaper says so; anything else was forced."""
    return ExitCode.DROPPED if code == ExitCode.DROPPED else ExitCode.FORCED
