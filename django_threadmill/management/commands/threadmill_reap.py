"""manage.py threadmill_reap: settle expired leases on every queue of a backend."""

import logging
import signal
import threading
import time
from collections.abc import Callable
from enum import Enum, auto
from functools import partial
from types import FrameType
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ...backend import ThreadmillTaskBackend
from ...broker import checked_batch_size
from ...exceptions import BrokerRefused, BrokerUnavailable
from ...wording import command_line, listed_names, shown
from ...worker.exit_codes import ExitCode
from ...worker.interruptible import (
    PASS_GRACE_S,
    Interrupted,
    call_unless_stopped,
    stop_signals_heard,
)
from ...worker.orphans import is_pid_1, reap_orphans
from ...worker.reap_hold import ReapHold
from ...worker.reap_report import ReapReport, failed_with, what_failed
from ...worker.reaper import DEFAULT_BATCH_SIZE, reap_pass
from ...worker.signal_flag import SignalFlag
from ...worker.wakeup import WakeupPipe
from ..backend_option import BACKEND_HELP, backend_option
from ..checks_at_start import ChecksAtStart
from ..ending import run_then_exit
from ..int_option import int_option
from ..log_format_option import add_log_format_option
from ..reap_interval import MIN_REAP_INTERVAL_S, check_reap_interval
from ..report_output import CutShortCommand
from ..seconds_option import seconds_option
from ..set_up_frozen import SetUpFrozen

logger = logging.getLogger("django_threadmill.worker.reaper")

DEFAULT_INTERVAL_S = 10.0  # seconds between passes; a lost lease waits lease_ttl + this at most


class LoopPass(Enum):
    """How a pass of the loop went, as its stop line counts them: ``passes`` counts those
    made, failed (whole or in part) or not, and ``failed_passes`` those that failed."""

    MADE = auto()
    FAILED = auto()
    LEFT_BEHIND = auto()  # a stop came first: the loop ends, and counts it in neither


def stop_on_first_signal(stop: SignalFlag, signum: int, frame: FrameType | None) -> None:
    """Set ``stop`` on the first SIGTERM, SIGINT or SIGHUP; exit at once on the second."""
    if stop.is_set():
        raise SystemExit(128 + signum)
    logger.info("Reaper stopping signal=%s", signal.Signals(signum).name)
    stop.set()


class PassFailed(Exception):
    """A pass that failed, whole or in part: ``what`` failed (``what_failed``'s words, or
    "Reap pass failed" for one that failed at its start) and ``error`` why, kept apart for the
    loop's line, "retrying next interval" between them. Its CommandError said "Reap pass
    failed, retrying next interval error=Reap of queue emails failed, the other queues were
    reaped: …", whose opening words said the pass failed when the other queues were reaped.
    ``command_error`` is the error the command ends with."""

    def __init__(
        self, what: str, error: BrokerUnavailable, *, returncode: int, message: str = ""
    ) -> None:
        super().__init__(message or f"{what}: {error}")
        self.what = what
        self.error = error
        self.returncode = returncode

    def command_error(self) -> CommandError:
        return CommandError(str(self), returncode=self.returncode)


def _pass_failed(what: str, cause: BrokerUnavailable, message: str = "") -> PassFailed:
    """Return the error that ends a failed pass: exit code 4 where Redis refused this backend
    (credentials, an ACL rule, a command renamed away), which no wait fixes, so that a restart
    policy leaves it alone, as at start; 1 otherwise (docs/lifecycle.md)."""
    refused = isinstance(cause, BrokerRefused)
    returncode = ExitCode.REFUSED if refused else 1
    return PassFailed(what, cause, returncode=returncode, message=message)


def _when_settled(alias: str, hold: ReapHold) -> str:
    """Say who settles the leases a ``--once`` pass held, and when: another ``--once`` after
    the hold; while the reapers' server note is unread, only a reaping loop, which saw the
    primaries itself for that long (docs/lifecycle.md, After an outage or a stall)."""
    again_s = round(hold.hold_s, 1)
    if hold.unnoted is None:
        return (
            f"Live workers renew theirs meanwhile: run '{_once(alias)}' again in {again_s:g}s "
            "to settle those still expired (docs/lifecycle.md, After an outage or a stall)."
        )
    return (
        "A --once pass settles none while that node is down: a reaping loop (threadmill_reap "
        "without --once, or a worker's supervisor) settles those still expired once it has "
        f"seen the same primaries for {again_s:g}s (docs/lifecycle.md, After an outage or a "
        f"stall). {hold.unnoted}"
    )


def _once(alias: str) -> str:
    """Return the ``threadmill_reap --once`` command line that reaps ``alias``'s queues."""
    return command_line(alias, "threadmill_reap --once")


def _unknown_queues(report: ReapReport) -> str:
    """Say that a pass went through the configured queues alone, the queue set unread."""
    return (
        "Reap pass went through the queues in QUEUES alone (those listed above): the queues "
        "registered only in Redis are unknown, their expired leases left for a pass that can "
        f"read them: {report.unknown}"
    )


def _stopped_part_way(alias: str, report: ReapReport) -> str:
    """Say that a stop ended a ``--once`` pass between two rounds, with expired leases left on
    the queues whose line ends ``incomplete=yes``, and how to settle them."""
    return (
        "Reap pass stopped part-way by a stop signal: the counts above are what it settled, "
        f"and queue {listed_names(report.stopped)} still holds expired leases (nothing is half "
        f"done). Run '{_once(alias)}' again to settle them."
    )


class Command(SetUpFrozen, ChecksAtStart, CutShortCommand):
    help = (
        "Settle expired leases on every queue of a threadmill backend: expired reservations "
        "go back to READY, expired running attempts become FAILED (or are retried by their "
        "task's policy). Loops until SIGTERM, SIGINT or SIGHUP; --once and --dry-run run one "
        "pass."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", default="default", help=BACKEND_HELP)
        parser.add_argument("--once", action="store_true", help="Run one pass, then exit.")
        parser.add_argument(
            "--interval",
            type=seconds_option,
            default=DEFAULT_INTERVAL_S,
            help=f"Seconds between passes when looping, {MIN_REAP_INTERVAL_S:g} or more "
            f"(default: {DEFAULT_INTERVAL_S:g}).",
        )
        parser.add_argument(
            "--batch-size",
            type=int_option,
            default=DEFAULT_BATCH_SIZE,
            help=f"Expired leases settled per Redis call (default: {DEFAULT_BATCH_SIZE}).",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Print what one pass would settle, change nothing, and exit.",
        )
        add_log_format_option(parser)

    def run_from_argv(self, argv: list[str]) -> None:
        """Run as ``manage.py threadmill_reap``, and end the process without waiting for a
        call to a silent Redis that a stop cut short."""
        run_then_exit(partial(super().run_from_argv, argv))

    def handle(self, *args: Any, **options: Any) -> None:
        backend = backend_option(options["backend"])
        if options["interval"] <= 0:
            raise CommandError(
                f"--interval {options['interval']:g} is not positive. Use a number of seconds "
                "above 0, e.g. --interval 10."
            )
        check_reap_interval(
            "--interval", options["interval"], f"Use {MIN_REAP_INTERVAL_S:g} or more, e.g. 10."
        )
        try:
            given_as = f"--batch-size {shown(options['batch_size'])}"
            checked_batch_size(options["batch_size"], given_as)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        try:
            self._run(backend, options)
        except PassFailed as failed:
            raise failed.command_error() from failed.error

    def _run(self, backend: ThreadmillTaskBackend, options: dict[str, Any]) -> None:
        """Run one pass (``--once``, ``--dry-run``) or the loop, stopping on a signal."""
        single = options["once"] or options["dry_run"]
        # A --once pass holds as a loop's first does (a --dry-run changes nothing, so it
        # neither notes the server nor holds): after a restart or a failover of Redis, a
        # pass from cron must not settle the leases live workers have yet to renew.
        hold = None if options["dry_run"] else ReapHold(backend.settings.renewal_s)
        stop = SignalFlag()
        if single and threading.current_thread() is not threading.main_thread():
            # In a thread: no signal to hear.
            self._pass(backend, options, stop.is_set, report=True, hold=hold)
            return
        wakeup = WakeupPipe()  # the main thread sleeps on it during a pass; signals wake it
        try:
            with stop_signals_heard(wakeup, partial(stop_on_first_signal, stop)):
                if single:
                    self._pass_unless_stopped(
                        backend, options, wakeup, stop, report=True, hold=hold
                    )
                else:
                    self._loop(backend, options, wakeup, stop)
        finally:
            wakeup.close()

    def _pass(
        self,
        backend: ThreadmillTaskBackend,
        options: dict[str, Any],
        stopped: Callable[[], bool],
        *,
        report: bool = False,
        hold: ReapHold | None = None,
    ) -> None:
        """Run one pass, ending it between two rounds once ``stopped()`` holds, printing its
        counts when ``report``; a pass that failed, on every queue, on some or part-way (after
        the counts of what it did), raises PassFailed, and a reported one a stop ended with
        expired leases left CommandError. Leases are settled as ``hold`` allows, if given."""
        reap: Callable[..., ReapReport] = reap_pass if hold is None else hold.run
        try:
            done = reap(
                backend,
                batch_size=options["batch_size"],
                dry_run=options["dry_run"],
                stopped=stopped,
            )
        except BrokerUnavailable as exc:  # its message is the error alone
            raise _pass_failed("Reap pass failed", exc, str(exc)) from exc
        if report:
            self._report(backend.alias, done, hold)
        if done.unreachable:  # Redis gone part-way: waiting for it fixes that
            what = what_failed(done)
            raise PassFailed(what, done.unreachable, returncode=1) from done.unreachable
        if failed := failed_with(done):  # a queue's, or advancing workflows' after them
            raise _pass_failed(what_failed(done), failed) from failed
        if report and done.unknown:  # a loop's pass logged it, and goes on as it is
            raise CommandError(_unknown_queues(done)) from done.unknown
        if report and done.stopped:
            raise CommandError(_stopped_part_way(backend.alias, done))

    def _report(self, alias: str, report: ReapReport, hold: ReapHold | None) -> None:
        for line in report.lines:
            self.stdout.write(line)
        if hold is not None and hold.held:
            self.stdout.write(f"Expired leases held: {hold.held}. {_when_settled(alias, hold)}")
        verb = "Would settle" if report.dry_run else "Settled"
        for queue, counts in report.queues.items():
            failed = (
                " incomplete=yes" if queue in report.failures or queue in report.stopped else ""
            )
            self.stdout.write(
                f"{verb} queue={queue} released={counts.released} failed={counts.failed} "
                f"retried={counts.retried} stale={counts.stale} set_aside={counts.set_aside}"
                f"{failed}"
            )

    def _loop(
        self,
        backend: ThreadmillTaskBackend,
        options: dict[str, Any],
        wakeup: WakeupPipe,
        stop: SignalFlag,
    ) -> None:
        """Reap every ``--interval`` seconds until a signal; a Redis outage is retried.

        Refused credentials or ACL rights stop the loop: waiting cannot fix them. At PID 1,
        the orphans handed over are waited for after each pass, whose thread has ended: no
        code of this process waits for a child then (docs/deploy.md, Docker image).
        """
        logger.info(
            "Reaper started backend=%s interval_s=%g batch_size=%d",
            backend.alias,
            options["interval"],
            options["batch_size"],
        )
        hold = ReapHold(backend.settings.renewal_s)
        reaps_orphans = is_pid_1()
        passes = failed = 0
        while not stop.is_set():
            made = self._loop_pass(backend, options, wakeup, stop, hold)
            if made is LoopPass.LEFT_BEHIND:
                break
            passes += 1
            failed += made is LoopPass.FAILED
            if reaps_orphans:
                reap_orphans()
            _sleep_ticking(wakeup, stop, options["interval"], hold)
        logger.info(
            "Reaper stopped backend=%s passes=%d failed_passes=%d", backend.alias, passes, failed
        )

    def _loop_pass(
        self,
        backend: ThreadmillTaskBackend,
        options: dict[str, Any],
        wakeup: WakeupPipe,
        stop: SignalFlag,
        hold: ReapHold,
    ) -> LoopPass:
        """Run one pass of the loop and say how it went; LEFT_BEHIND once a stop came first.
        A failed pass is logged and tried again the next interval, unless Redis refused this
        backend."""
        try:
            made = self._pass_unless_stopped(backend, options, wakeup, stop, hold=hold)
        except PassFailed as exc:
            if exc.returncode == ExitCode.REFUSED:  # no wait fixes a password or an ACL rule
                raise
            logger.warning("%s, retrying next interval error=%s", exc.what, exc.error)
            return LoopPass.FAILED
        return LoopPass.MADE if made else LoopPass.LEFT_BEHIND

    def _pass_unless_stopped(
        self,
        backend: ThreadmillTaskBackend,
        options: dict[str, Any],
        wakeup: WakeupPipe,
        stop: SignalFlag,
        *,
        report: bool = False,
        hold: ReapHold | None = None,
    ) -> bool:
        """Run one pass in a thread of its own while this one sleeps on ``wakeup``; False
        once a stop came first: the pass is left behind, and the command exits without it,
        not after a Redis that takes connections and never answers held each of its calls
        for ``socket_timeout`` (docs/lifecycle.md, ``manage.py threadmill_reap``). The loop's
        passes and the one of ``--once`` and ``--dry-run`` alike."""
        reap = partial(self._pass, backend, options, stop.is_set, report=report, hold=hold)
        try:
            call_unless_stopped(
                "reap", reap, wakeup.sleep_until, wakeup.poke, stop.is_set, grace_s=PASS_GRACE_S
            )
        except Interrupted:
            logger.info(
                "Reaper stopping without waiting for Redis call=reap (it has not answered; "
                "the command exits without it)"
            )
            return False
        return True


def _sleep_ticking(wakeup: WakeupPipe, stop: SignalFlag, interval_s: float, hold: ReapHold) -> None:
    """Sleep ``interval_s`` or until a stop, telling ``hold`` the loop runs at least every
    ``hold.tick_s``: a longer gap is a stall of this host (docs/lifecycle.md, After an
    outage or a stall)."""
    end = time.monotonic() + interval_s
    while not stop.is_set() and (left := end - time.monotonic()) > 0:
        wakeup.sleep_until(stop.is_set, min(left, hold.tick_s))
        hold.tick()
