"""The ``--backend`` option every threadmill command takes: an alias of a ThreadmillTaskBackend;
and the queues a command names, checked as a worker serves them."""

from collections.abc import Sequence

from django.core.management.base import CommandError

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..codec.ids import named_short
from ..exceptions import ImproperlyConfiguredThreadmill
from ..worker.options import served_queues

BACKEND_HELP = "TASKS alias of a ThreadmillTaskBackend (default: 'default')."


def backend_option(alias: str) -> ThreadmillTaskBackend:
    """Return the backend ``--backend`` names; raise CommandError naming the aliases that do,
    and ``alias`` cut short past SHOWN_ID_CHARS (one of 10,000 characters filled the message)."""
    try:
        return threadmill_backend(alias)
    except ImproperlyConfiguredThreadmill as exc:
        raise CommandError(f"--backend {named_short(alias)}: {exc}") from exc


def queues_option(backend: ThreadmillTaskBackend, asked: Sequence[str] | None) -> tuple[str, ...]:
    """Return the queues a worker serves for ``asked`` (worker/options.served_queues: every one
    in QUEUES when none is asked); raise CommandError naming the queues that would do."""
    try:
        return served_queues(backend, asked)
    except ImproperlyConfiguredThreadmill as exc:
        raise CommandError(str(exc)) from exc
