"""The ``--backend`` option every threadmill command takes: an alias of a ThreadmillTaskBackend."""

from django.core.management.base import CommandError

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..exceptions import ImproperlyConfiguredThreadmill

BACKEND_HELP = "TASKS alias of a ThreadmillTaskBackend (default: 'default')."


def backend_option(alias: str) -> ThreadmillTaskBackend:
    """Return the backend ``--backend`` names; raise CommandError naming the aliases that do."""
    try:
        return threadmill_backend(alias)
    except ImproperlyConfiguredThreadmill as exc:
        raise CommandError(f"--backend {alias}: {exc}") from exc
