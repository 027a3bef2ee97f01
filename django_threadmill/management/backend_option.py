"""The ``--backend`` option every threadmill command takes: an alias of a ThreadmillTaskBackend;
and the queues a command names, checked as a worker serves them."""

from collections.abc import Sequence

from django.core.management.base import CommandError

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..codec.ids import named_short
from ..compat import DEFAULT_TASK_BACKEND_ALIAS
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


def command_line(alias: str, words: str) -> str:
    """Return ``manage.py <words>`` as a command tells the operator to run it on ``alias``:
    ``--backend`` added for any alias but the option's default (without it, a resume of a
    queue two aliases both have resumed the other alias's, leaving this one paused)."""
    backend = "" if alias == DEFAULT_TASK_BACKEND_ALIAS else f" --backend {alias}"
    return f"manage.py {words}{backend}"


def queues_option(backend: ThreadmillTaskBackend, asked: Sequence[str] | None) -> tuple[str, ...]:
    """Return the queues a worker serves for ``asked`` (worker/options.served_queues: every one
    in QUEUES when none is asked); raise CommandError naming the queues that would do."""
    try:
        return served_queues(backend, asked)
    except ImproperlyConfiguredThreadmill as exc:
        raise CommandError(str(exc)) from exc
