"""The system checks of the commands that wait for Redis themselves (worker, reaper), and of
``check``: what they say when a TASKS setting is refused."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError, SystemCheckError

from ..checks import REFUSED, redis_may_be_down
from ..exceptions import ImproperlyConfiguredThreadmill
from ..worker.exit_codes import ExitCode


@contextmanager
def checks_at_start() -> Iterator[None]:
    """Run a command's checks with Redis allowed to be down (the command waits for it), and
    end it with exit code 4 (REFUSED) when Redis refused the credentials or ACL rights: a
    service manager must not restart it (docs/worker.md, Exit codes), as it would after 1."""
    with redis_may_be_down(), settings_refused_plainly():
        try:
            yield
        except SystemCheckError as exc:
            if REFUSED not in str(exc):
                raise
            raise SystemCheckError(*exc.args, returncode=ExitCode.REFUSED) from exc


@contextmanager
def settings_refused_plainly() -> Iterator[None]:
    """Say in one line which TASKS setting a ThreadmillTaskBackend refused, and the fix, where
    the checks met it: Django's own task check builds every backend, and the refusal came out
    as a traceback (a command's ``--backend`` says the same line, CommandError too)."""
    try:
        yield
    except ImproperlyConfiguredThreadmill as exc:
        raise CommandError(f"TASKS: {exc}") from exc
