"""One backend alias as its readers see it: the broker, its inspector and its queues."""

from dataclasses import dataclass
from functools import cached_property

from ...conf.settings import BackendSettings, check_queue_name
from ...exceptions import ImproperlyConfiguredThreadmill
from ...wording import listed_names
from ..broker import Broker
from ..layouts import QueueNames
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
    def names(self) -> QueueNames:
        """The queues and every shard count's parts of each, read in one round trip; while the
        Redis Cluster node of the queue set does not answer, QUEUES alone and why
        (``Broker.queue_names``); on a Redis Cluster, those on a node that does not answer,
        each with its error (``Broker.reached``): the admin, the scrape and the listing read
        the ``served`` ones, and name the others.

        ``queues()`` stays strict: deciding that a queue is unknown needs the queue set read."""
        names = self.broker.reached(self.broker.queue_names(self.configured, every_count=True))
        self.inspector.layouts = names.recorded  # the counts its reads sum: not read again
        return names

    def known_queue(self, name: str) -> str:
        """Return ``name`` if the alias has that queue: one QUEUES allows (any, when empty),
        or one Redis knows (it was enqueued to).

        A queue Redis knows but QUEUES no longer names (renamed in the settings, or enqueued
        to by another deploy) still holds tasks, so an operator may pause, resume and inspect
        it. Raise ImproperlyConfiguredThreadmill naming the queues the alias has otherwise.
        """
        check_queue_name(name)
        if not self.configured or name in self.configured or name in self.queues():
            return name
        configured = listed_names(sorted(self.configured))
        seen = listed_names([queue for queue in self.queues() if queue not in self.configured])
        also = f" nor one Redis knows ({seen})" if seen else ""
        raise ImproperlyConfiguredThreadmill(
            f"Queue {name!r} is not in TASKS[{self.alias!r}]['QUEUES'] ({configured}){also}. "
            "Add it there or pick one of those."
        )

    @cached_property
    def _queues(self) -> list[str]:  # read once per page view: a Source lives for one request
        return self.broker.queues(self.configured)
