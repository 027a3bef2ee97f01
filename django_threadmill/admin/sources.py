"""Find the ThreadmillTaskBackend aliases in ``TASKS``: every admin page covers all of them."""

from dataclasses import dataclass
from functools import cached_property

from django.conf import settings
from django.http import Http404
from django.utils.module_loading import import_string

from ..backend import ThreadmillTaskBackend
from ..broker.inspect import Inspector
from ..compat import task_backends


@dataclass(frozen=True)
class Source:
    """One backend alias as the admin sees it."""

    backend: ThreadmillTaskBackend

    @property
    def alias(self) -> str:
        return self.backend.alias

    @cached_property
    def inspector(self) -> Inspector:
        return Inspector(self.backend.broker)

    def queues(self) -> list[str]:
        """Return the configured queues and every queue Redis has seen, sorted."""
        return self._queues

    @cached_property
    def _queues(self) -> list[str]:  # read once per page view: a Source lives for one request
        return sorted(set(self.backend.queues) | set(self.inspector.queues()))


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


def sources() -> list[Source]:
    """Return a Source for every ThreadmillTaskBackend alias."""
    return [Source(task_backends[alias]) for alias in threadmill_aliases()]


def source_or_404(alias: str) -> Source:
    """Return the Source of ``alias``, or 404 if it is not a ThreadmillTaskBackend alias."""
    if alias not in threadmill_aliases():
        raise Http404(f"No ThreadmillTaskBackend alias {alias!r} in TASKS.")
    return Source(task_backends[alias])
