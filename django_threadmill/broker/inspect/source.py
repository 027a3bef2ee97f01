"""One backend alias as its readers see it: the broker, its inspector and its queues."""

from dataclasses import dataclass
from functools import cached_property

from ...conf.settings import BackendSettings
from ..broker import Broker
from .inspector import Inspector


@dataclass(frozen=True)
class Source:
    """One ``TASKS`` alias for the admin and the metrics: made per request, read through once.

    ``configured`` holds the alias's ``QUEUES``; Redis knows the queues ever enqueued to.
    """

    broker: Broker
    configured: frozenset[str]

    @property
    def alias(self) -> str:
        return self.broker.settings.alias

    @property
    def settings(self) -> BackendSettings:
        return self.broker.settings

    @cached_property
    def inspector(self) -> Inspector:
        return Inspector(self.broker)

    def queues(self) -> list[str]:
        """Return the configured queues and every queue Redis has seen, sorted."""
        return self._queues

    @cached_property
    def _queues(self) -> list[str]:  # read once per page view: a Source lives for one request
        return self.broker.queues(self.configured)
