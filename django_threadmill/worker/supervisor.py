"""The supervisor: starts worker processes, restarts the ones that die, replaces the ones that
recycle, relays stop requests."""

import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager, suppress
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

from ..backend import ThreadmillTaskBackend
from .backoff import RESTART_BACKOFF
from .chores import Chores
from .control import COUNTED, RECYCLING, REPLACED, STOP
from .exit_codes import ExitCode
from .interruptible import STOP_SIGNALS, stop_signals, stop_signals_heard
from .options import WorkerOptions
from .orphans import is_pid_1, reap_orphans, warn_unreaped_in_process
from .process import WorkerProcess
from .shutdown import STOP_MARGIN_S
from .slots import Retiring, Slot
from .wakeup import WakeupPipe

logger = logging.getLogger(__name__)

FAST_FAILURE_S = 10.0  # a process that dies this soon after start counts as failing at start
MAX_FAST_FAILURES = 5  # consecutive fast failures before the supervisor gives up
# A process still alive this long past its own stop's end (--grace-period + STOP_MARGIN_S) is
# killed: it cannot run its stop at all (frozen by SIGSTOP, a task holding the GIL in C code).
# Room for a process that ended its stop to exit, within the slack docs/deploy.md adds.
EXIT_SLACK_S = 3.0
# How a stop asked for ends (docs/worker.md, Shutdown): as asked, with tasks still running after
# the grace period (or cut short by a second signal), or with writes Redis did not take.
STOP_ENDINGS = frozenset({ExitCode.OK, ExitCode.FORCED, ExitCode.DROPPED})
# How a recycled process ends: as it said, or as a stop asked for meanwhile ends.
RECYCLE_ENDINGS = STOP_ENDINGS | {ExitCode.RECYCLE}
# The codes a process ends a stop with that the command exits with too, meaning the same: tasks
# still running after the grace period, Redis refusing this worker, writes Redis did not take,
# a crash (docs/worker.md, Exit codes).
COMMAND_ENDINGS = frozenset({ExitCode.FORCED, ExitCode.REFUSED, ExitCode.CRASHED, ExitCode.DROPPED})
# Why a process the supervisor did not stop ended so, by its exit code, for its WARNING.
STOPPED_ALONE = {
    ExitCode.OK: "asked directly, such as by SIGTERM to its pid, not through the supervisor",
    ExitCode.FORCED: "asked directly, such as by SIGTERM to its pid, with tasks still running "
    "after the grace period or a second signal: the reaper settles what it held",
    ExitCode.DROPPED: "Redis did not take its last writes in time: the reaper settles what it held",
}


class Supervisor:
    """Keep ``options.processes`` worker processes running until told to stop."""

    def __init__(self, options: WorkerOptions, backend: ThreadmillTaskBackend) -> None:
        self.options = options
        self.backend = backend
        self.context = multiprocessing.get_context("fork")
        self.slots = [Slot(index) for index in range(options.processes)]
        self.signals = 0  # stop signals heard; only the second of them kills
        self._relayed = 0  # the signals acted on
        # It stops every process on its own (giving up, Redis refusing): a stop, not a signal.
        self._stopping_itself = False
        self.wakeup = WakeupPipe()  # the main thread sleeps on it; signals wake it
        self._kill_at: float | None = None  # once the processes are told to stop
        self._killed = False  # it killed the processes itself (a second signal, an overrun)
        self.exit_code = ExitCode.OK
        # Orphans are handed to PID 1 only (a container with no init): elsewhere every child
        # it has is its own, which it waits for itself.
        self._reaps_orphans = is_pid_1()
        self.chores = Chores(
            options,
            backend,
            self.wakeup,
            lambda: self.stopping,
            self._act_on_signals,
            forced=lambda: self.signals > 1,  # a second signal kills, and waits for no call
        )

    @property
    def stopping(self) -> bool:
        """Whether every process is being stopped: a signal came, or the supervisor stops
        them itself. Nothing is started, restarted, reaped or fired from then on."""
        return self.signals > 0 or self._stopping_itself

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1  # the signal woke the main thread already: through its pipe

    def _act_on_signals(self) -> None:
        """Relay the first stop signal not acted on yet; kill at the second.

        Two that came together (SIGINT and SIGTERM at once) are both acted on: the relay
        ends the slots that wait for a restart, which the kill alone left waiting, and the
        supervisor waited for them for good."""
        if self.signals > self._relayed:
            first = self._relayed == 0
            self._relayed = self.signals
            if first:
                self._relay()
            if self.signals > 1:
                self._kill()

    def run(self) -> ExitCode:
        try:
            with stop_signals_heard(self.wakeup, self._on_signal), _exits_heard():
                return self._supervise()
        finally:
            self.wakeup.close()

    def _first_pass(self) -> bool:
        """Reap and fire due schedules before any process starts; False if a stop came
        meanwhile (start-up interrupted: nothing is started)."""
        # A reap pass advances workflows too, and beside a --burst just started it could
        # enqueue a step the burst has already looked past, ending the burst with the workflow
        # still running.
        self.chores.run_due()
        if self.signals:
            logger.info("Start-up interrupted pid=%d: no worker process started", os.getpid())
        return not self.signals

    def _supervise(self) -> ExitCode:
        logger.info(
            "Supervisor started pid=%d processes=%d backend=%s",
            os.getpid(),
            self.options.processes,
            self.options.backend_alias,
        )
        if self._first_pass():
            for slot in self.slots:
                self._spawn(slot)
            # Once the processes start: the read holds none of them up.
            self.chores.say_paused()
        while not all(slot.ended() for slot in self.slots):
            ready = self._wait_for_event()
            self._act_on_signals()
            self._kill_overdue()
            self._hear(ready)
            self._collect_exits()
            self._reap_orphans()
            self._restart_due()
            self.chores.run_due()
        logger.info("Supervisor stopped exit_code=%d", self.exit_code)
        return self.exit_code

    def run_in_process(self) -> ExitCode:
        """Run one worker process's loop in this process, with no fork (``--processes 0``).

        Only with ``--burst``: nothing restarts the worker here, so it runs until the queues
        are empty. The supervisor's first pass comes first, as with processes: a reap pass and
        the schedules' due slots; a stop meanwhile ends the command there. The signal handlers
        the worker sets are put back after it, for a caller that goes on (``call_command``).
        """
        warn_unreaped_in_process()
        handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
        try:
            # Counted from now until the worker's handlers replace this one, which then ask
            # whether one came: put back to the defaults in between, a stop signal killed the
            # process without a line (docs/worker.md, Stopping during start-up).
            for signum in stop_signals():
                signal.signal(signum, self._on_signal)
            try:
                with stop_signals_heard(self.wakeup, self._on_signal):
                    started = self._first_pass()
            finally:
                self.wakeup.close()  # before the worker makes its own: it puts back what it found
            if not started:
                return ExitCode.OK
            return WorkerProcess(self.options, self.backend).run(heard=lambda: self.signals > 0)
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)

    def _spawn(self, slot: Slot) -> None:
        held = tuple(fd for other in self.slots for fd in other.control_fds())
        try:
            slot.start(self.context, self.options, held)
        except OSError as exc:  # a pids limit (a container's, ulimit -u), no memory, no fds
            self._fork_refused(slot, exc)
            return
        logger.info("Worker process spawned slot=%d pid=%s", slot.index, slot.pid)

    def _fork_refused(self, slot: Slot, exc: OSError) -> None:
        """Try a fork the system refused again with backoff, as a process that died at start
        (it counts toward giving up); the processes running meanwhile run on."""
        slot.started_at = time.monotonic()  # the attempt: it failed at start
        delay = self._count_failure(slot, f"fork refused ({exc})")
        if delay is not None:
            logger.error(
                "Worker process not started slot=%d error=%s restart_in_s=%.1f: the system "
                "refused a new process (a container's pids limit, ulimit -u, memory). Lower "
                "--processes or --max-threads, or raise the limit.",
                slot.index,
                exc,
                delay,
            )

    def _relay(self) -> None:
        """Tell every live process to stop gracefully (the first signal)."""
        logger.info("Stopping worker processes count=%d", self._live_count())
        if self._kill_at is None:
            self._kill_at = (
                time.monotonic() + self.options.grace_period_s + STOP_MARGIN_S + EXIT_SLACK_S
            )
        for slot in self.slots:
            slot.tell(STOP)
            if slot.process is None:
                slot.done = True

    def _kill(self) -> None:
        """Kill every live process at once (a second signal); the reaper settles their leases."""
        logger.warning("Second signal: killing worker processes count=%d", self._live_count())
        self._kill_all()

    def _kill_overdue(self) -> None:
        """Kill the processes still alive past the stop's bound (docs/worker.md, Shutdown): a
        process frozen (SIGSTOP) or whose task holds the GIL in C code never runs its own stop,
        and the supervisor used to wait for it forever."""
        if self._kill_at is None or time.monotonic() < self._kill_at or not self._live_count():
            return
        self._kill_at = None
        logger.error(
            "Worker processes still running past the stop's bound, killing them pids=%s "
            "bound_s=%g (--grace-period + %g; frozen, or a task holding the GIL: their leases "
            "lapse and the reaper settles their tasks)",
            ",".join(str(process.pid) for slot in self.slots for process in slot.processes()),
            self.options.grace_period_s + STOP_MARGIN_S + EXIT_SLACK_S,
            STOP_MARGIN_S + EXIT_SLACK_S,
        )
        self._kill_all()

    def _kill_all(self) -> None:
        """SIGKILL every live process (a stopped one too); the command exits FORCED."""
        self.exit_code = ExitCode.FORCED
        self._killed = True
        for slot in self.slots:
            for process in slot.processes():
                process.kill()

    def _live_count(self) -> int:
        return sum(len(slot.processes()) for slot in self.slots)

    def _wait_for_event(self) -> Collection[object]:
        """Sleep until a process exits or says it recycles, a signal arrives, a restart or a
        reap is due; return what is ready."""
        sentinels = [process.sentinel for slot in self.slots for process in slot.processes()]
        sockets = [
            slot.control_fd for slot in self.slots if slot.listening and slot.control_fd is not None
        ]
        timers: list[float] = []
        # Once stopping, nothing is restarted, reaped or fired: a timer of theirs that fell due
        # would wake this loop at once, again and again, for the whole grace period.
        if not self.stopping:
            timers += [slot.restart_at for slot in self.slots if slot.restart_at is not None]
            timers += self.chores.due_times()
        elif self._kill_at is not None:
            timers.append(self._kill_at)
        timeout = max(0.0, min(timers) - time.monotonic()) if timers else None
        ready = wait([*sentinels, *sockets, self.wakeup.read_fd], timeout)
        if self.wakeup.read_fd in ready:
            self.wakeup.drain()
        return ready

    def _hear(self, ready: Collection[object]) -> None:
        """Read what the processes said: one that recycles is replaced now, not once it exits,
        so new tasks run while it finishes its own (docs/worker.md, Recycling)."""
        for slot in self.slots:
            if not slot.listening or slot.control_fd not in ready:
                continue
            heard = slot.hear()
            if COUNTED in heard and slot.retiring is not None:
                # The replacement counts: the recycled process may sign off (worker/shutdown.py).
                with suppress(OSError):  # it has exited: collected next
                    os.write(slot.retiring.control_fd, REPLACED)
            if RECYCLING in heard and not self.stopping:
                logger.info("Worker process recycling slot=%d pid=%s", slot.index, slot.pid)
                slot.crashes = 0
                if slot.retiring is None:
                    self._retire(slot)
                else:  # one extra process per slot at most: replaced once that one has ended
                    slot.recycling = True

    def _retire(self, slot: Slot) -> None:
        """Move the slot's recycling process aside to finish its tasks; start a fresh one."""
        slot.retire()
        self._spawn(slot)

    def _collect_exits(self) -> None:
        for slot in self.slots:
            stopping = self.stopping  # a slot before this one may have stopped them all
            if slot.retiring is not None and not slot.retiring.process.is_alive():
                self._collect_retired(slot, stopping)
            process = slot.process
            if process is None or process.is_alive():
                continue
            code = slot.collect()
            if stopping:
                self._stopped(slot, process, code)
            elif slot.asked_alone and code in STOP_ENDINGS:  # a --burst goes on without it
                self._replace_stopped(slot, process, code)
            elif code == ExitCode.RECYCLE or (slot.recycling and code in STOP_ENDINGS):
                # Still in the slot: it recycled while the one it replaced still ran. Before the
                # burst's end: one that left writes to the reaper (DROPPED) did not find the
                # queues empty, and the slot went unserved until the other one ended.
                self._report_recycled(slot, process, code)
                slot.crashes = 0
                self._spawn(slot)
            elif self.options.burst and code in (ExitCode.OK, ExitCode.DROPPED):
                self._burst_ended(slot, process, code)
            elif code == ExitCode.REFUSED:  # the process logged why; every other one would too
                self._stop_all(slot, ExitCode.REFUSED)
            elif code in (ExitCode.OK, ExitCode.DROPPED):
                self._replace_stopped(slot, process, code)
            else:
                self._died(slot, process, code)

    def _stopped(self, slot: Slot, process: BaseProcess, code: int | None) -> None:
        """Mark the slot done once its process stopped as asked; say how in the exit code."""
        slot.done = True
        self._count_stopped(slot, process, code, slot.worker_id)

    def _count_stopped(
        self, slot: Slot, process: BaseProcess, code: int | None, worker_id: str
    ) -> None:
        """Say in the exit code how a process ended while every process stopped, and name
        and sign off one that died meanwhile (a crash in its own stop, a kill this supervisor
        did not make): its exit 5, or a kill, made the command exit 1, the code of tasks still
        running after the grace period, with no line naming what ended it, and
        ``threadmill_health`` counted it live until its lease would end (docs/worker.md, Exit
        codes)."""
        if code not in RECYCLE_ENDINGS and code != ExitCode.REFUSED and not self._killed:
            logger.error(
                "Worker process died while stopping slot=%d pid=%s status=%s (what it had not "
                "written or handed back waits for its leases to lapse and the reaper)",
                slot.index,
                process.pid,
                _status(process, code),
            )
            self.chores.sign_off(worker_id)
        self.exit_code = self.exit_code or _stopped_with(code)

    def _burst_ended(self, slot: Slot, process: BaseProcess, code: int) -> None:
        """The slot's process found the queues empty (--burst): the slot is done, unless a
        recycled process of it ended after this one started. What that one's last tasks
        enqueued (a retry, a workflow's next step) is then for a fresh process to find."""
        self._count_left_to_reaper(code)
        if slot.started_at < slot.retired_at:
            self._spawn(slot)
        else:
            self._stopped(slot, process, code)

    def _died(self, slot: Slot, process: BaseProcess, code: int | None) -> None:
        """Sign off a process that died (crashed, killed); restart it with backoff."""
        self.chores.sign_off(slot.worker_id)
        if self.options.burst:
            # What the dead process held stays leased until the reaper settles it, after
            # the burst: the queues may look empty, but the burst did not run them all.
            self.exit_code = self.exit_code or ExitCode.CRASHED
        self._schedule_restart(slot, process, code)

    def _collect_retired(self, slot: Slot, stopping: bool) -> None:
        """Account for a recycled process that ended beside its replacement; then replace the
        one that said it recycles meanwhile, or let a --burst slot look again."""
        retired, code = slot.collect_retired()
        if stopping:
            self._count_stopped(slot, retired.process, code, retired.worker_id)
            return
        self._report_retired(slot, retired, code)
        if slot.recycling and slot.process is not None:
            self._retire(slot)
        elif self.options.burst and slot.done:
            slot.done = False
            self._spawn(slot)

    def _report_retired(self, slot: Slot, retired: Retiring, code: int | None) -> None:
        """Log how a recycled process ended, and sign off one that died; its replacement runs
        already, so nothing restarts and nothing counts toward giving up."""
        process = retired.process
        if code in RECYCLE_ENDINGS:
            self._report_recycled(slot, process, code)
        else:
            self.chores.sign_off(retired.worker_id)
            logger.error(
                "Recycled worker process died slot=%d pid=%s status=%s; its replacement runs on",
                slot.index,
                process.pid,
                _status(process, code),
            )
            if self.options.burst:  # what it held waits for the reaper, as after any death
                self.exit_code = self.exit_code or ExitCode.CRASHED

    def _report_recycled(self, slot: Slot, process: BaseProcess, code: int | None) -> None:
        """Log the end of a recycled process. One whose tasks still ran after the grace
        period (FORCED: an async task held its event loop, docs/worker.md, What blocks the
        loop), or whose last writes Redis did not take (DROPPED), did not die; under --burst
        the command says what it left to the reaper."""
        if code == ExitCode.FORCED:
            logger.warning(
                "Worker process recycled with tasks still running after the grace period "
                "slot=%d pid=%s (named in its ERROR above: their leases lapse and the reaper "
                "settles them)",
                slot.index,
                process.pid,
            )
        elif code == ExitCode.DROPPED:
            logger.warning(
                "Recycled worker process stopped with work left to the reaper slot=%d pid=%s "
                "(Redis did not take its last writes in time)",
                slot.index,
                process.pid,
            )
        else:
            logger.info("Worker process recycled slot=%d pid=%s", slot.index, process.pid)
        self._count_left_to_reaper(code)

    def _replace_stopped(self, slot: Slot, process: BaseProcess, code: int) -> None:
        """Start a fresh process in place of one asked to stop by something other than this
        supervisor (a SIGTERM sent to its pid), or one that stopped with work left to the
        reaper (DROPPED): a stop, not a crash, so it is not counted toward giving up, and a
        --burst goes on in the fresh one. Warned, as the supervisor did not ask for it."""
        logger.warning(
            "Worker process stopped slot=%d pid=%s status=exit code %d (%s); starting a fresh one",
            slot.index,
            process.pid,
            code,
            STOPPED_ALONE[ExitCode(code)],
        )
        if code == ExitCode.FORCED:  # a second signal ended it at once, not signed off
            self.chores.sign_off(slot.worker_id)
        self._count_left_to_reaper(code)
        self._spawn(slot)

    def _count_left_to_reaper(self, code: int | None) -> None:
        """Under --burst, say in the command's exit code what a process left to the reaper:
        tasks still running after its grace period (FORCED), or writes Redis did not take
        (DROPPED). The burst did not run those to their end (docs/worker.md, Exit codes)."""
        if self.options.burst and code in (ExitCode.FORCED, ExitCode.DROPPED):
            self.exit_code = self.exit_code or ExitCode(code)

    def _schedule_restart(self, slot: Slot, process: BaseProcess, code: int | None) -> None:
        """Restart a dead process with backoff; give up if processes keep dying at start."""
        status = _status(process, code)
        delay = self._count_failure(slot, status)
        if delay is not None:
            logger.error(
                "Worker process died slot=%d pid=%s status=%s restart_in_s=%.1f",
                slot.index,
                process.pid,
                status,
                delay,
            )

    def _count_failure(self, slot: Slot, status: str) -> float | None:
        """Count a failure of the slot's process toward giving up, and schedule its restart
        with backoff; return the wait, or None once given up (processes keep failing at start).
        """
        fast = time.monotonic() - slot.started_at < FAST_FAILURE_S
        slot.crashes = slot.crashes + 1 if fast else 1
        if slot.crashes >= MAX_FAST_FAILURES:
            logger.critical(
                "Worker processes keep dying at start slot=%d status=%s crashes=%d; giving up. "
                "Check the log lines above for the cause (settings, imports, Redis).",
                slot.index,
                status,
                slot.crashes,
            )
            self._stop_all(slot, ExitCode.GAVE_UP)
            return None
        delay = RESTART_BACKOFF.after(slot.crashes)
        slot.restart_at = time.monotonic() + delay
        return delay

    def _stop_all(self, slot: Slot, exit_code: ExitCode) -> None:
        """Stop every process and exit with ``exit_code``, as the first signal would: the
        operator's first signal after it lets the stop go on; only a second one kills."""
        self.exit_code = exit_code
        self._stopping_itself = True
        slot.done = True
        self._relay()

    def _reap_orphans(self) -> None:
        """At PID 1, wait for the orphans the kernel handed over (a task's daemon, its
        subprocesses once its process recycled): they stayed zombies, one per task that left
        one. Never for a worker process, whose exit the supervisor reads itself."""
        if self._reaps_orphans:
            reap_orphans({process.pid for slot in self.slots for process in slot.processes()})

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.restart_at is not None and slot.restart_at <= now and not self.stopping:
                self._spawn(slot)


@contextmanager
def _exits_heard() -> Iterator[None]:
    """Wake the main thread, through the wake-up pipe, each time a worker process exits.

    A process's sentinel and control socket close only once every copy of them does: a child
    a task forked holds copies until it ends, and a killed process went unnoticed until then
    (docs/worker.md, How the loop works). SIGCHLD comes as it exits, whatever it left behind.
    """
    previous = signal.signal(signal.SIGCHLD, _on_exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGCHLD, previous)


def _on_exit(signum: int, frame: FrameType | None) -> None:
    """Nothing to do: the signal woke the main thread, which collects what exited."""


def _status(process: BaseProcess, code: int | None) -> str:
    """Say how a process ended: its exit code, or the signal that killed it. ``code`` is the
    code as read (``slots.as_said``): None for one the worker did not set itself."""
    ended = process.exitcode
    if ended is not None and ended < 0:
        return f"signal {-ended}"
    if code is None:
        return f"exit code {ended}, not the worker's own (a task's os._exit(), or code it called)"
    return f"exit code {ended}"


def _stopped_with(code: int | None) -> ExitCode:
    """Return the command's exit code for a process that ended with ``code`` while it stopped:
    as asked (or recycled), OK; a code that means the same for the command (COMMAND_ENDINGS),
    that code; a death (a kill, a task's os._exit: None), CRASHED, as under --burst."""
    if code in (ExitCode.OK, ExitCode.RECYCLE):
        return ExitCode.OK
    return ExitCode(code) if code in COMMAND_ENDINGS else ExitCode.CRASHED
