"""The system checks of the commands that wait for Redis themselves (worker, reaper)."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import SystemCheckError

from ..checks import REFUSED, redis_may_be_down
from ..worker.exit_codes import ExitCode


@contextmanager
def checks_at_start() -> Iterator[None]:
    """Run a command's checks with Redis allowed to be down (the command waits for it), and
    end it with exit code 4 (REFUSED) when Redis refused the credentials or ACL rights: a
    service manager must not restart it (docs/worker.md, Exit codes), as it would after 1."""
    with redis_may_be_down():
        try:
            yield
        except SystemCheckError as exc:
            if REFUSED not in str(exc):
                raise
            raise SystemCheckError(*exc.args, returncode=ExitCode.REFUSED) from exc
