"""The system checks of the commands that wait for Redis themselves (worker, reaper), and of
``check``: what they say when a TASKS setting is refused, and a stop while they read Redis."""

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from types import FrameType
from typing import Any

from django.core import checks
from django.core.management.base import BaseCommand, CommandError, SystemCheckError

from ..checks import REFUSED, redis_may_be_down
from ..exceptions import ImproperlyConfiguredThreadmill
from ..worker.exit_codes import ExitCode
from ..worker.interruptible import Interrupted, call_unless_stopped, stop_signals_heard
from ..worker.wakeup import WakeupPipe
from .log_format_option import LogFormatCommand

logger = logging.getLogger(__name__)


def checks_at_start(check: Callable[[], None], alias: str) -> None:
    """Run a command's ``check`` with Redis allowed to be down (the command waits for it), and
    end it with exit code 4 (REFUSED) when Redis refused the credentials or ACL rights: a
    service manager must not restart it (docs/worker.md, Exit codes), as it would after 1.
    Only the Redis of ``alias``, the one the command serves, is read.

    A SIGTERM or SIGINT while the checks wait on a Redis that does not answer ends the command
    at once, exit code 0 (docs/worker.md, Stopping during start-up).
    """
    with redis_may_be_down(alias), settings_refused_plainly():
        try:
            _stoppable(check)
        except SystemCheckError as exc:
            if REFUSED not in str(exc):
                raise
            raise SystemCheckError(*exc.args, returncode=ExitCode.REFUSED) from exc


def _stoppable(check: Callable[[], None]) -> None:
    """Run ``check`` in a thread of its own while the main thread listens for a stop; raise
    SystemExit(0) on one, the checks left behind (the command exits without them)."""
    if threading.current_thread() is not threading.main_thread():  # no signal reaches it
        check()
        return
    heard: list[int] = []

    def hear(signum: int, frame: FrameType | None) -> None:
        heard.append(signum)

    wakeup = WakeupPipe()
    try:
        with stop_signals_heard(wakeup, hear):
            stopped = partial(bool, heard)
            call_unless_stopped("checks", check, wakeup.sleep_until, wakeup.poke, stopped)
    except Interrupted:
        logger.info(
            "Start-up interrupted on %s: the system checks wait for Redis, which has not "
            "answered (not waited for)",
            signal.Signals(heard[0]).name,
        )
        raise SystemExit(ExitCode.OK) from None
    finally:
        wakeup.close()


@contextmanager
def settings_refused_plainly() -> Iterator[None]:
    """Say in one line which TASKS setting a ThreadmillTaskBackend refused, and the fix, where
    the checks met it: Django's own task check builds every backend, and the refusal came out
    as a traceback (a command's ``--backend`` says the same line, CommandError too)."""
    try:
        yield
    except ImproperlyConfiguredThreadmill as exc:
        raise CommandError(f"TASKS: {exc}") from exc


def checks_logged(fail_level: int = checks.ERROR, **run: Any) -> None:
    """Run the system checks as ``BaseCommand.check`` does, but log each issue below
    ``fail_level`` as one record at its level, its hint within (under ``--log-format json``,
    one JSON object each, where Django printed a block of plain lines), and raise
    SystemCheckError with those at or above it, as Django does, for the command's error line.
    """
    run.pop("display_num_errors", None)
    issues = [issue for issue in checks.run_checks(**run) if not issue.is_silenced()]
    for issue in issues:
        if issue.level < fail_level:
            logger.log(issue.level, "System check: %s", issue)
    serious = [str(issue) for issue in issues if issue.level >= fail_level]
    if serious:
        raise SystemCheckError(
            "System check identified issues that stop the command: " + "\n".join(serious)
        )


class ChecksAtStart(LogFormatCommand):
    """A command serving the ``--backend`` alias (the worker, the reaper) whose system checks
    run as ``checks_at_start`` says, on that alias's Redis alone, and are logged under
    ``--log-format json`` (``checks_logged``)."""

    served_alias = "default"

    def execute(self, *args: Any, **options: Any) -> Any:
        self.served_alias = options["backend"]  # check() is given no options
        return super().execute(*args, **options)

    def check(self, *args: Any, **kwargs: Any) -> None:
        """Run the system checks, except "Redis unreachable": the command waits for Redis."""
        run = (
            partial(checks_logged, **kwargs)
            if self.json_lines
            else partial(super().check, *args, **kwargs)
        )
        checks_at_start(run, self.served_alias)


class SettingsRefusedPlainly(BaseCommand):
    """A command whose system checks say a refused TASKS setting in one line, as the worker's
    and the reaper's do (``checks_at_start``), where Django's own check printed a traceback."""

    def check(self, *args: Any, **kwargs: Any) -> None:
        with settings_refused_plainly():
            super().check(*args, **kwargs)
