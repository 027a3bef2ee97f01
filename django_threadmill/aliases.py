"""The ``TASKS`` aliases served by a ThreadmillTaskBackend: find one, or say why it is not one.

The commands, the worker's processes, the admin and the metrics view all look aliases up here.
"""

from django.conf import settings
from django.utils.module_loading import import_string

from .backend import ThreadmillTaskBackend
from .broker.inspect.source import Source
from .compat import BaseTaskBackend, task_backends
from .exceptions import ImproperlyConfiguredThreadmill
from .wording import a_type, shown


def _is_threadmill(path: object) -> bool:
    try:
        found = import_string(str(path))
    except ImportError:
        return False
    return isinstance(found, type) and issubclass(found, ThreadmillTaskBackend)


def threadmill_aliases() -> list[str]:
    """Return the ``TASKS`` aliases whose BACKEND is a ThreadmillTaskBackend, in settings order."""
    return [
        alias
        for alias, params in getattr(settings, "TASKS", {}).items()
        if _is_threadmill(params.get("BACKEND"))
    ]


def threadmill_backend(alias: str) -> ThreadmillTaskBackend:
    """Return the backend of ``alias``; raise, naming the aliases that would do, if it is none."""
    if not isinstance(alias, str):  # a list failed as "unhashable type"; a backend, as no alias
        named = alias.alias if isinstance(alias, BaseTaskBackend) else "default"
        raise TypeError(
            f"A backend is named by its alias in TASKS, a str, not {a_type(alias)}: "
            f"{shown(alias)}. Pass e.g. {named!r}."
        )
    if alias not in getattr(settings, "TASKS", {}):
        raise ImproperlyConfiguredThreadmill(
            f"TASKS has no backend {shown(alias)}. Use an alias of a ThreadmillTaskBackend in "
            f"TASKS ({_usable()})."
        )
    backend = task_backends[alias]
    if not isinstance(backend, ThreadmillTaskBackend):
        raise ImproperlyConfiguredThreadmill(
            f"TASKS[{alias!r}] is {a_type(backend)}, not a ThreadmillTaskBackend: it has "
            f"no Redis queues, leases or schedules. Use an alias of a ThreadmillTaskBackend "
            f"({_usable()})."
        )
    return backend


def _usable() -> str:
    """The aliases an error can point to instead; only an error pays for importing them."""
    return ", ".join(repr(name) for name in threadmill_aliases()) or "none yet"


def source_of(backend: ThreadmillTaskBackend) -> Source:
    """Return what the admin and the metrics read of ``backend``."""
    return Source(backend.broker, frozenset(backend.queues))


def sources() -> list[Source]:
    """Return a Source for every ThreadmillTaskBackend alias, in settings order."""
    return [source_of(threadmill_backend(alias)) for alias in threadmill_aliases()]
