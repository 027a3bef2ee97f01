"""One worker process: a prefetcher, worker threads, an ack writer and a lease keeper.

It waits for Redis, starts its role threads (worker/crew.py), sleeps on its wake-up pipe and
control socket until a stop is asked for, and then stops as worker/shutdown.py orders; when it
recycles is worker/recycling.py's to say.
"""

import logging
import os
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
from ..wording import listed_values
from ..workflows.advance import drain
from ..workflows.failed_entries import FailedEntries
from .backoff import REDIS_BACKOFF
from .cancelled_steps import CancelledSteps
from .control import ASKED_ALONE, COUNTED, ENDING, REPLACED
from .crew import Crew
from .executor import Executor
from .exit_codes import ExitCode
from .interruptible import STOP_SIGNALS, Interrupted, call_unless_stopped, stop_signals
from .options import WorkerOptions
from .recycling import Recycler
from .shutdown import Shutdown
from .signal_flag import SignalFlag
from .wakeup import WakeupPipe

logger = logging.getLogger(__name__)


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
        self.stop_requested = SignalFlag()  # asked for (request_stop), or recycling
        # Asked for from outside a recycle: a signal, the supervisor, --burst, a failure. A
        # recycle's running tasks finish unbounded until then (docs/worker.md, Recycling).
        self.stop_asked = SignalFlag()
        self._wakeup = WakeupPipe()  # the main thread sleeps on it; signals and stops wake it
        self._signals = 0
        self._control_fd: int | None = None
        self.replaced = SignalFlag()  # the supervisor said REPLACED: the replacement counts
        # Set once a task held the event loop past --task-timeout: a recycle then waits for the
        # loop's tasks no longer than --grace-period (docs/worker.md, What blocks the loop).
        self.loop_given_up = threading.Event()
        self.recycler = Recycler(self)
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
            on_task_done=self.recycler.count_task,
            on_empty=self.request_stop,
            on_refused=self._refused,
            on_crash=self.crashed,
            release=self.release,
            on_first_renewal=partial(self.tell_supervisor, COUNTED),
        )
        self.crew.pool.on_replacement_refused = self.recycler.replacement_refused
        self.crew.hold_limit.on_held = self.recycler.give_up_loop

    @property
    def finished_count(self) -> int:
        return self.crew.finished

    @property
    def recycling(self) -> bool:
        """Whether the process recycles: its buffer closed for it (worker/recycling.py)."""
        return self.recycler.started

    @property
    def supervised(self) -> bool:
        """Whether a supervisor forked this process, and hears it on the control socket."""
        return self._control_fd is not None

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

    def tell_supervisor(self, message: bytes) -> None:
        """Send ``message`` on the control socket, if a supervisor forked this process."""
        if self._control_fd is not None:
            with suppress(OSError):  # the supervisor is gone: this process stops on its own
                os.write(self._control_fd, message)

    def crashed(self) -> None:
        """A role thread's own loop failed: stop, so the supervisor starts a fresh process."""
        self.request_stop(ExitCode.CRASHED)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1
        if self._signals > 1:
            try:
                logger.warning("Second signal, exiting now worker_id=%s", self.worker_id)
            finally:  # a log line the signal interrupted mid-write may refuse this one
                self.tell_supervisor(ENDING + bytes([ExitCode.FORCED]))  # the worker's own 1
                os._exit(ExitCode.FORCED)
        alone = not self.stop_asked.is_set()  # not after --burst's end or the supervisor's stop
        self.request_stop()  # before the log line, which must not raise out of the handler
        if alone:
            self.tell_supervisor(ASKED_ALONE)
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
                    self.wait()
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
                    lambda done, timeout_s: self.wait(timeout_s, until=done),
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
                self.wait(wait_s)
                continue
            logger.info(
                "Worker process started worker_id=%s pid=%d queues=%s threads=%d "
                "max_threads=%d async_concurrency=%d prefetch=%s sync_ack=%s burst=%s "
                "redis_version=%s",
                self.worker_id,
                os.getpid(),
                listed_values(self.options.queues),
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

    def wait(self, timeout_s: float | None = None, until: Callable[[], bool] | None = None) -> None:
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
        """Stop in the order of docs/worker.md, Shutdown (worker/shutdown.py)."""
        Shutdown(self).run()

    def release(self, unstarted: list[Reservation]) -> bool:
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


def _relayed_by_supervisor(signum: int, frame: FrameType | None) -> None:
    """Hear SIGINT or SIGHUP in a worker process a supervisor runs, and do nothing: the
    supervisor heard it too and relays the stop."""
