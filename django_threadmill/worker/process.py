"""One worker process: a prefetcher, worker threads, an ack writer and a lease keeper."""

import logging
import math
import os
import random
import selectors
import signal
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from types import FrameType
from typing import Any

from ..backend import ThreadmillTaskBackend
from ..broker import Reservation
from ..codec.ids import make_worker_id
from ..exceptions import BrokerRefused, BrokerUnavailable
from ..workflows.advance import drain
from ..workflows.failed_entries import FailedEntries
from .backoff import REDIS_BACKOFF
from .cancelled_steps import CancelledSteps
from .crew import Crew
from .event_loop import EventLoopLane
from .executor import Executor
from .exit_codes import ExitCode
from .interruptible import STOP_SIGNALS, Interrupted, call_unless_stopped, stop_signals
from .memory import MIB, ResidentMemory
from .options import WorkerOptions
from .signal_flag import SignalFlag
from .stop_calls import StopCall, join_until, start_call
from .threads import WorkerThread
from .wakeup import WakeupPipe

logger = logging.getLogger(__name__)

STOP = b"s"  # control message from the supervisor: stop gracefully
RECYCLING = b"r"  # control message to the supervisor: recycling, start the replacement now
# Control message to the supervisor: Redis took this process's first renewal, so
# threadmill_health counts it. The supervisor then tells the process it replaces REPLACED.
COUNTED = b"c"
# Control message from the supervisor to a recycling process: its replacement counts, so it may
# sign off. Until then it waits, at most REPLACEMENT_WAIT_S, still renewing: signed off first,
# its host read live=0 between the two, and a probe called a healthy worker unhealthy.
REPLACED = b"p"
REPLACEMENT_WAIT_S = 5.0
# Control message to the supervisor, its exit code (one byte) after it: the process ends with it
# on purpose. A code of the worker's own (0, 1, 3, 4, 6) counts only if said: a task's
# os._exit(4) had the supervisor stop every process for good (worker/slots.py).
ENDING = b"e"
# Control message to the supervisor: a SIGTERM sent to this process alone asked it to stop, not
# the supervisor. It replaces the process however its stop ends (0, 1, 6), and a --burst goes on:
# an exit 0 alone read as the burst's end, with the tasks it handed back left READY.
ASKED_ALONE = b"a"
WRITER_MIN_FLUSH_S = 5.0  # the ack writer gets at least this long to flush at shutdown
# The stop ends this long after the grace period at the latest, whatever Redis does: the ack
# writer's flush, then its second chance (docs/deploy.md, Kubernetes, "Stopping").
STOP_MARGIN_S = 2 * WRITER_MIN_FLUSH_S
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
# The --max-memory to suggest when a process passes it on its first task: this many times what it
# holds then, room for what its tasks grow it by (docs/worker.md, Recycling)
FRESH_PROCESS_ROOM = 1.5


class WorkerProcess:
    """Run tasks until told to stop, then stop in the order docs/worker.md, Shutdown gives."""

    def __init__(
        self,
        options: WorkerOptions,
        backend: ThreadmillTaskBackend,
        worker_tag: str | None = None,
    ) -> None:
        self.options = options
        self.backend = backend
        self.broker = backend.broker
        # ``worker_tag``: the supervisor's pick, so it knows this id (worker/slots.py).
        self.worker_id = make_worker_id(worker_tag)
        self.exit_code = ExitCode.OK
        self._count_lock = threading.Lock()
        self.max_tasks = (
            None
            if options.max_tasks is None
            else options.max_tasks + random.randint(0, options.max_tasks_jitter)
        )
        # --max-memory: the RSS probe, and how many bytes of RSS the process may pass
        self.memory = None if options.max_memory_mb is None else ResidentMemory()
        self.max_memory_bytes = (options.max_memory_mb or 0) * MIB
        self._recycling = False
        self.stop_requested = SignalFlag()  # asked for (request_stop), or recycling
        # Asked for from outside a recycle: a signal, the supervisor, --burst, a failure. A
        # recycle's running tasks finish unbounded until then (docs/worker.md, Recycling).
        self.stop_asked = SignalFlag()
        self._wakeup = WakeupPipe()  # the main thread sleeps on it; signals and stops wake it
        self._signals = 0
        self._control_fd: int | None = None
        self.replaced = SignalFlag()  # the supervisor said REPLACED: the replacement counts
        executor = Executor(
            self.worker_id,
            backend.alias,
            type(backend),
            task_timeout_s=options.task_timeout_s,
            max_result_bytes=backend.settings.max_result_bytes,
            retry_checked=CancelledSteps(self.broker).retry_checked,
        )
        self.crew = Crew(
            options,
            self.broker,
            executor,
            self.worker_id,
            drain_outbox=partial(drain, backend, failed=FailedEntries()),
            lease_interval_s=backend.settings.renewal_s,
            on_task_done=self._count_task,
            on_empty=self.request_stop,
            on_refused=self._refused,
            on_crash=self._crashed,
            release=self._release,
            on_first_renewal=partial(self._tell_supervisor, COUNTED),
        )
        self.crew.pool.on_replacement_refused = self._replacement_refused
        # Set once a task held the event loop past --task-timeout: a recycle then waits for the
        # loop's tasks no longer than --grace-period (docs/worker.md, What blocks the loop).
        self.loop_given_up = threading.Event()
        self.crew.hold_limit.on_held = self._give_up_loop

    @property
    def finished_count(self) -> int:
        return self.crew.finished

    def request_stop(self, exit_code: ExitCode = ExitCode.OK) -> None:
        """Ask the main thread to stop the process (from any thread); ``RECYCLE`` is the
        process's own, whose running tasks are not held to --grace-period."""
        if exit_code != ExitCode.OK and self.exit_code == ExitCode.OK:
            self.exit_code = exit_code
        if exit_code != ExitCode.RECYCLE:
            self.stop_asked.set()
        self.stop_requested.set()
        self._wakeup.poke()

    def _refused(self, error: BrokerRefused) -> None:
        """Stop for good, once: Redis refused this worker's credentials or rights (an ACL
        changed under it, say), which no wait fixes. Whichever role met it first says so."""
        if self.exit_code == ExitCode.REFUSED:
            return
        logger.critical("Redis refused this worker, stopping error=%s", error)
        self.request_stop(ExitCode.REFUSED)

    def _count_task(self) -> None:
        """Count a task a worker thread finished; recycle the process at --max-tasks, or once
        its RSS passes --max-memory.

        Counted when the thread is done, not when the result is written, so the ack writer's
        lag cannot let a process run past the limit. The buffer closes in the same hold of the
        count lock that reached the limit: another thread done meanwhile waits for the lock
        before it takes again, and then finds the buffer closed. Closed after the lock was let
        go, the other threads ran up to seven more tasks while this one waited for the GIL.
        """
        with self._count_lock:
            self.crew.finished += 1
            first = self.crew.finished == 1
            reached = self.max_tasks is not None and self.crew.finished == self.max_tasks
            unstarted = self._close_for_recycle() if reached else None
        if unstarted is not None:
            self._recycle_closed(unstarted)
        elif not reached and self.memory is not None and not self.stop_requested.is_set():
            resident = self.memory.read()
            if resident > self.max_memory_bytes:
                if first:
                    self._say_limit_below_a_fresh_process(resident)
                self._recycle(resident)

    def _say_limit_below_a_fresh_process(self, resident: int) -> None:
        """Say that --max-memory was passed by the first task: a process that imported the
        tasks' modules (which the check at start cannot see) may hold that much before any
        leak, and then every process recycles after every task, forever."""
        logger.error(
            "--max-memory passed on the first task, so every worker process may recycle after "
            "every task worker_id=%s rss_mb=%.1f max_memory_mb=%s: a process holds this much "
            "once it has imported the tasks' modules and run one. Raise it well above that, "
            "e.g. --max-memory %d (docs/worker.md, Recycling)",
            self.worker_id,
            resident / MIB,
            self.options.max_memory_mb,
            math.ceil(resident * FRESH_PROCESS_ROOM / MIB),
        )

    def _recycle(self, resident: int | None = None) -> None:
        """Start no more tasks, finish the running ones and exit RECYCLE; tell the supervisor
        now, so the fresh process that replaces this one takes tasks while they finish.
        ``resident``: the RSS that passed --max-memory, logged."""
        with self._count_lock:
            unstarted = self._close_for_recycle()
        if unstarted is None:
            return
        if resident is not None:
            logger.warning(
                "RSS passed --max-memory, recycling worker_id=%s rss_mb=%.1f max_memory_mb=%s "
                "(it finishes the tasks it holds; a fresh process replaces it)",
                self.worker_id,
                resident / MIB,
                self.options.max_memory_mb,
            )
        self._recycle_closed(unstarted)

    def _close_for_recycle(self) -> list[Reservation] | None:
        """Close the buffer for a recycle, under the count lock; return the tasks never
        started, or None if a recycle began already. Closed first: the other threads would
        take tasks past --max-tasks while the prefetcher's stop makes its round trip."""
        if self._recycling:
            return None
        self._recycling = True
        return self.crew.buffer.close()

    def _recycle_closed(self, unstarted: list[Reservation]) -> None:
        """Go on with a recycle whose buffer closed: release ``unstarted``, stop the
        prefetcher and the process. What the prefetcher puts in after the close is released
        by the process's stop, once it has joined the prefetcher."""
        self.crew.prefetcher.stop()  # now, from this thread: the main thread may wait for the GIL
        self._release(unstarted)
        self.request_stop(ExitCode.RECYCLE)
        self._tell_supervisor(RECYCLING)

    def _replacement_refused(self) -> None:
        """The system refused the thread that was to replace one --task-timeout abandoned: the
        pool stays a thread short while that task runs, maybe for good. Recycle: the fresh
        process gets a whole pool, and the abandoned threads end with this one. Once the pool
        had none left, the process held its reserved tasks, renewing their leases, and ran none.
        """
        if self.stop_requested.is_set():
            return
        logger.warning(
            "Worker thread refused in place of one --task-timeout abandoned, recycling "
            "worker_id=%s (the abandoned threads end with this process)",
            self.worker_id,
        )
        self._recycle()

    def _give_up_loop(self) -> None:
        """A task held the event loop past --task-timeout, and every other async task with it,
        maybe for good (a read without a timeout): recycle, so a fresh process serves the
        queues. The loop's tasks then get --grace-period, not a recycle's unbounded wait: what
        still runs at its end is left to the reaper, as at any stop."""
        self.loop_given_up.set()
        if not self.stop_requested.is_set():  # a stop bounds the loop by the grace period
            self._recycle()

    def _tell_supervisor(self, message: bytes) -> None:
        """Send ``message`` on the control socket, if a supervisor forked this process."""
        if self._control_fd is not None:
            with suppress(OSError):  # the supervisor is gone: this process stops on its own
                os.write(self._control_fd, message)

    def _crashed(self) -> None:
        """A role thread's own loop failed: stop, so the supervisor starts a fresh process."""
        self.request_stop(ExitCode.CRASHED)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1
        if self._signals > 1:
            try:
                logger.warning("Second signal, exiting now worker_id=%s", self.worker_id)
            finally:  # a log line the signal interrupted mid-write may refuse this one
                self._tell_supervisor(ENDING + bytes([ExitCode.FORCED]))  # the worker's own 1
                os._exit(ExitCode.FORCED)
        alone = not self.stop_asked.is_set()  # not after --burst's end or the supervisor's stop
        self.request_stop()  # before the log line, which must not raise out of the handler
        if alone:
            self._tell_supervisor(ASKED_ALONE)
        with suppress(Exception):  # e.g. a write to stderr the signal interrupted, reentered
            logger.info("Stopping on %s worker_id=%s", signal.Signals(signum).name, self.worker_id)

    def run(
        self, control_fd: int | None = None, heard: Callable[[], bool] = lambda: False
    ) -> ExitCode:
        """Run until a signal, a supervisor message, --burst or --max-tasks says stop.

        ``heard``: whether a stop signal came before this process's handlers were set, to the
        handlers of whoever runs it here (``--processes 0``).
        """
        self._control_fd = control_fd  # before the handlers, which tell the supervisor
        signal.signal(signal.SIGTERM, self._on_signal)
        self._wakeup.install()
        # Ctrl-C and a terminal's hangup reach the whole process group; the supervisor relays
        # them as a STOP message. Heard and dropped here, not ignored: an ignored signal stays
        # ignored across exec, in every program a task starts, where a handler is reset.
        relayed = _relayed_by_supervisor if control_fd is not None else self._on_signal
        for signum in stop_signals():
            if signum != signal.SIGTERM:
                signal.signal(signum, relayed)
                if control_fd is not None:  # as when ignored, no call a task makes sees EINTR
                    signal.siginterrupt(signum, False)
        if control_fd is not None:
            # Forked with them blocked (Supervisor._spawn): one sent since has waited for these
            # handlers, instead of running the supervisor's, which the fork handed down and
            # which stopped nothing here.
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        if heard():
            logger.info("Stopping on a signal heard as it started worker_id=%s", self.worker_id)
            self.request_stop()
        try:
            if not self._wait_for_redis():
                return self.exit_code
            try:
                if self._start_threads():
                    self._wait()
            finally:  # an error in the wait too: the threads stop in order, none left running
                self.stop()
            return self.exit_code
        finally:
            self._wakeup.close()

    def _start_threads(self) -> bool:
        """Start every role's thread; False, the process stopping, if the system refused one
        (a thread or memory limit): the ones started are stopped, not left to hold it up."""
        try:
            for thread in self.crew.start_order():
                thread.start()
        except RuntimeError as exc:  # "can't start new thread"
            logger.critical(
                "Worker process could not start its threads, stopping error=%s: the system "
                "allows no more threads, or no memory for their stacks. Lower --threads, "
                "--max-threads or --processes, or raise the limit (ulimit -u, ulimit -v).",
                exc,
            )
            self.request_stop(ExitCode.CRASHED)
            return False
        return True

    def _wait_for_redis(self) -> bool:
        """Wait (with backoff, logging each failure) until Redis answers; False if stopped.

        Refused credentials or ACL rights stop the process at once: no wait fixes them.
        """
        failures = 0
        while not self.stop_requested.is_set():
            try:
                info = call_unless_stopped(
                    "start",
                    self._look_at_redis,
                    lambda done, timeout_s: self._wait(timeout_s, until=done),
                    self._wakeup.poke,
                    self.stop_requested.is_set,
                )
            except Interrupted:
                logger.info(
                    "Start-up interrupted worker_id=%s: stopped while Redis had not answered "
                    "(not waited for)",
                    self.worker_id,
                )
                return False
            except BrokerRefused as exc:
                logger.critical("Redis refused this worker, stopping error=%s", exc)
                self.exit_code = ExitCode.REFUSED
                return False
            except BrokerUnavailable as exc:
                failures += 1
                wait_s = REDIS_BACKOFF.after(failures)
                logger.warning("Redis unavailable, retrying in %.1fs error=%s", wait_s, exc)
                self._wait(wait_s)
                continue
            logger.info(
                "Worker process started worker_id=%s pid=%d queues=%s threads=%d "
                "max_threads=%d async_concurrency=%d prefetch=%s sync_ack=%s burst=%s "
                "redis_version=%s",
                self.worker_id,
                os.getpid(),
                ",".join(self.options.queues),
                self.options.threads,
                self.options.max_threads or self.options.threads,
                self.options.async_concurrency,
                self.options.prefetch or "follows the pool",
                self.options.sync_ack,
                self.options.burst,
                info.get("redis_version"),
            )
            return True
        return False

    def _look_at_redis(self) -> dict[str, Any]:
        """Read the server's INFO and register the queues served: the process's first calls.

        A registration Redis did not take does not hold the start back: on a Redis Cluster
        whose primary of the alias-wide keys is down, the queues of the others are served
        meanwhile, and the lease keeper registers them once it answers (docs/worker.md, Leases).
        """
        info = self.broker.server_info()
        try:
            self.broker.register_queues(self.options.queues)
        except BrokerRefused:
            raise
        except BrokerUnavailable as exc:
            logger.warning(
                "Queue names not registered, the lease keeper registers them later error=%s", exc
            )
        return info

    def _wait(
        self, timeout_s: float | None = None, until: Callable[[], bool] | None = None
    ) -> None:
        """Block the main thread until ``until()`` holds (default: a stop is requested, here
        or by the supervisor), or ``timeout_s`` has passed.

        A selector, not ``select.select``, which refuses a descriptor numbered past 1023: a
        process that runs the worker in itself (``--processes 0``, a test run) may hold that
        many files and sockets before it makes its wake-up pipe.
        """
        control_fd = self._control_fd
        done = self.stop_requested.is_set if until is None else until
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self._wakeup.read_fd, selectors.EVENT_READ)
            if control_fd is not None:
                selector.register(control_fd, selectors.EVENT_READ)
            while not done():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return
                ready = {key.fd for key, _ in selector.select(left)}
                if control_fd in ready:
                    try:
                        message = os.read(control_fd, 64)
                    except ConnectionResetError:  # it died with what this one said unread
                        message = b""  # (COUNTED): its exit, as an end of file
                    if REPLACED in message:
                        self.replaced.set()
                    if message.strip(REPLACED) or not message:  # STOP, or the supervisor's exit
                        logger.info(
                            "Stopping on %s worker_id=%s",
                            "supervisor request" if message else "supervisor exit",
                            self.worker_id,
                        )
                        self.request_stop()
                if self._wakeup.read_fd in ready:
                    self._wakeup.drain()

    def stop(self) -> None:
        """Stop in the order of docs/worker.md, Shutdown, within --grace-period +
        STOP_MARGIN_S whatever Redis does: every join shares one deadline, and a thread still
        waiting for Redis at the end is left behind (the process exits without it)."""
        deadline = time.monotonic() + self.options.grace_period_s
        end = deadline + STOP_MARGIN_S
        crew = self.crew
        if crew.sizing is not None:  # no thread added or retired from now
            crew.sizing.stop()
            join_until(crew.sizing, end)
        if crew.watchdog is not None:  # it still times tasks out in the grace period
            crew.watchdog.replacing = False
        # 1. Stop fetching, so nothing new is reserved while we hand work back. The wake token
        # and the release go through Redis: each in a thread of its own, so that a Redis that
        # does not answer cannot hold the stop (worker/stop_calls.py).
        crew.drainer.wind_down()
        waking = start_call("wake", crew.prefetcher.stop, self._crashed)
        join_until(waking, deadline)
        join_until(crew.prefetcher, deadline)
        # 2. Release reserved, never-started tasks to their queues, in their original place
        # (those waiting for a rate-limited queue's start turn too).
        crew.pacer.stop()
        crew.lane.stop()
        unstarted = crew.buffer.close()
        releasing = start_call("release", partial(self._release, unstarted), self._crashed)
        # An acquire still on its way puts its tasks in the closed buffer, which keeps them: a
        # call of its own releases them once the prefetcher has ended, never holding the stop.
        late: list[Reservation] = []
        releasing_late = start_call(
            "release-late", partial(self._release_late, late), self._crashed
        )
        join_until(releasing, deadline)
        # 3. Let running tasks finish, bounded by the grace period; then the event loop
        # cancels what it still runs (handed back: leases lapse, the reaper settles them). A
        # recycle's grace period starts once they ended, or once a stop is asked for.
        if not self.stop_asked.is_set():
            self._let_running_finish()
            deadline = time.monotonic() + self.options.grace_period_s
            end = deadline + STOP_MARGIN_S
        self._say_what_runs()
        # Threads between tasks are waited for past the grace period, short of the ack
        # writer's flush time: one that took a task just as the buffer closed, before it
        # said so, runs it that long at most.
        crew.pool.join(deadline, max(deadline, end - WRITER_MIN_FLUSH_S))
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
            "release-handed-back", partial(self._release_kept, handed_back), self._crashed
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
            self.worker_id,
            self.finished_count,
            self.exit_code,
        )

    def _wait_for_replacement(self, end: float) -> None:
        """Hold a recycle's sign-off until the supervisor says the replacement counts
        (REPLACED), the lease keeper renewing meanwhile; at most REPLACEMENT_WAIT_S, and never
        when a stop was asked for. Signed off first, the host had no process counted between
        the two, for as long as the replacement took to start, and threadmill_health exited 1
        for a worker that only recycled (docs/deploy.md, Health)."""
        if not self._recycling or self._control_fd is None:
            return
        if self.replaced.is_set() or self.stop_asked.is_set():
            return
        wait_s = min(REPLACEMENT_WAIT_S, end - WRITER_MIN_FLUSH_S - time.monotonic())
        if wait_s <= 0:
            return
        logger.info(
            "Recycled, signing off once the replacement renews worker_id=%s (at most %.1fs)",
            self.worker_id,
            wait_s,
        )
        self._wait(wait_s, until=lambda: self.replaced.is_set() or self.stop_asked.is_set())

    def _flush(self, deadline: float, end: float) -> None:
        """Let the ack writer write what it holds, then give it a second chance with retries
        given up (a batch that fails is dropped); both end by ``end``."""
        writer = self.crew.writer
        writer.stop()
        join_until(writer, _flush_until(deadline, end))
        if writer.is_alive():
            writer.give_up.set()
            join_until(writer, end)

    def _let_running_finish(self) -> None:
        """Wait, for a recycle, until the tasks running now have ended, however long they take:
        nothing outside waits for the process to go, and --grace-period would cut them short
        (run again or failed by the reaper). A signal or the supervisor's stop ends the wait;
        the event loop's tasks are not waited for once it was given up on (``_give_up_loop``)."""
        if running := self._running():
            logger.info(
                "Recycling once %d running task%s finish worker_id=%s",
                running,
                "" if running == 1 else "s",
                self.worker_id,
            )
        crew = self.crew
        while not (
            self.stop_asked.is_set()
            or (crew.pool.settled() and (self.loop_given_up.is_set() or not crew.lane.running))
        ):
            self._wait(RECYCLE_LOOK_S, until=self.stop_asked.is_set)

    def _running(self) -> int:
        """How many tasks run now, in worker threads and on the event loop."""
        return sum(t.busy for t in self.crew.pool.joinable()) + len(self.crew.lane.running)

    def _say_what_runs(self) -> None:
        """Say what the stop waits for, and how to cut it short (a second signal)."""
        running = self._running()
        if running:
            logger.info(
                "Waiting up to %gs for %d running task%s to finish; a second signal stops at "
                "once (Ctrl-C again) worker_id=%s",
                self.options.grace_period_s,
                running,
                "" if running == 1 else "s",
                self.worker_id,
            )

    def _release(self, unstarted: list[Reservation]) -> bool:
        """Hand ``unstarted`` back to their queues; False if Redis did not take them."""
        if not unstarted:
            return True
        leases = [reservation.lease for reservation in unstarted]
        self.crew.held.ending(leases)  # a renewal that meets them released is no news
        try:
            released = self.broker.release(leases)
        except Exception as exc:  # BrokerUnavailable, or a reply nothing translates: stop goes on
            logger.error(
                "Release failed count=%d error=%s (they return to READY when their lease "
                "lapses and the reaper runs)",
                len(leases),
                exc,
            )
            return False
        self.crew.held.discard(leases)
        logger.info("Released unstarted tasks count=%d worker_id=%s", released, self.worker_id)
        return True

    def _release_late(self, late: list[Reservation]) -> bool:
        """Once the prefetcher has ended, hand back what it put in the buffer after the stop
        closed it (``_release_kept``).

        It waits for the prefetcher without a bound of its own: the stop waits for it until the
        stop's own end (a recycle's comes once its running tasks ended), then exits without it.
        Made by the stop itself (the system refused its thread), it waits for nothing."""
        if isinstance(threading.current_thread(), StopCall):
            join_until(self.crew.prefetcher, None)
        return self._release_kept(late)

    def _release_kept(self, left: list[Reservation]) -> bool:
        """Hand back what the closed buffer kept, gathered into ``left``, which holds those not
        released yet (the stop counts them); False if Redis did not take them."""
        left.extend(self.crew.buffer.close())
        if not self._release(left):
            return False
        left.clear()
        return True

    def _report_left_behind(self, unreleased: int, calls: list[StopCall[Any]]) -> None:
        """Name the threads the stop ends without, and say in the exit code what that left to
        the reaper (docs/worker.md, Exit codes): outcomes not written, tasks not handed back,
        and an acquire Redis has not answered, which may have reserved tasks that reach no
        buffer."""
        crew = self.crew
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
                self.worker_id,
                LEFT_REFUSED if self.exit_code == ExitCode.REFUSED else LEFT_UNANSWERED,
            )
            if self.exit_code in (ExitCode.OK, ExitCode.RECYCLE):
                self.exit_code = ExitCode.DROPPED
        runners: list[WorkerThread | EventLoopLane] = [*crew.pool.joinable(), crew.lane]
        running = [thread for thread in runners if thread.is_alive()]
        if running:
            held = [task for thread in running for task in _running_tasks(thread)]
            logger.error(
                "Threads still running after the grace period names=%s tasks=%s (their leases "
                "will expire and the reaper settles them)",
                ",".join(thread.name for thread in running),
                ",".join(f"{task.lease.task_id}:{task.lease.task_path}" for task in held) or "none",
            )
        if running or crew.lane.handed_back:  # cancelled coroutines are handed back as well
            self.exit_code = ExitCode.FORCED


def _relayed_by_supervisor(signum: int, frame: FrameType | None) -> None:
    """Hear SIGINT or SIGHUP in a worker process a supervisor runs, and do nothing: the
    supervisor heard it too and relays the stop."""


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
