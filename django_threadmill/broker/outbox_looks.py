"""Which workflow outboxes hold entries: the looks of the workflow drainers and the reapers.

Each look reads the size of many outboxes in one round trip. On a Redis Cluster with a primary
down and no replica to take over (``cluster-require-full-coverage no``), that round trip failed
whole, and a worker's drainer advanced no workflow from the entries others left (a killed
process, a cancel) on the queues still served, for as long as the node was away. The sizes are
now read share by share once a node fails (calls.py, ``read_each``): a look returns the
outboxes it could not read with why, and the others are drained (docs/scaling.md, Batches that
span queues).
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from ..exceptions import BrokerUnavailable
from .calls import Command
from .connection import wrong_type
from .layouts import Layouts
from .raw_replies import RAW
from .script_errors import reply_of

type Read = tuple[Command, dict[str, Any]]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxLook:
    """What a look at the outboxes of some queues found (``outboxes_of_every_count``)."""

    found: list[str]  # the queue parts whose outbox holds entries
    other: list[str]  # the parts of the queues' other shard counts: the next look's ``known``
    # What a Redis Cluster node that did not answer kept from being read, with why: queue
    # parts, whose entries wait for it, and the layouts set by its key, whose counts last read
    # (``known``) stand meanwhile.
    unread: dict[str, BrokerUnavailable] = field(default_factory=dict)


class OutboxLooks(Layouts):
    """The looks at the outboxes of many queues, each read in one round trip."""

    def parts_with_outbox(self, queues: Sequence[str], also: Sequence[str] = ()) -> list[str]:
        """Return the parts of ``queues``, then those of ``also`` (the parts of another shard
        count: ``Broker.other_parts``), whose outbox holds entries (one round trip). Raise the
        error of an outbox not read.

        An outbox key of another type is left out, with a WARNING naming it, and the others
        are returned: raised, it failed this one round trip, and with it every queue's drain
        (docs/lifecycle.md, Keys of another type).
        """
        parts = [*(part for queue in queues for part in self.parts(queue)), *also]
        found, unread = self.outboxes_read(parts)
        if unread:
            raise next(iter(unread.values()))
        return found

    def outboxes_read(self, parts: Sequence[str]) -> tuple[list[str], dict[str, BrokerUnavailable]]:
        """Return those of the queue ``parts`` whose outbox holds entries, and those a Redis
        Cluster node that did not answer kept from being read, with why (one error per node):
        the reaper's pass drains the others (module docstring). Raise when no node answered."""
        return self._sizes(parts, self._read_each(self._outbox_reads(parts)))

    def outboxes_of_every_count(
        self, queues: Sequence[str], known: Sequence[str] = ()
    ) -> OutboxLook:
        """Return the parts of ``queues`` whose outbox holds entries, under every shard count
        they kept keys under, the parts of their other counts (``other_parts``): the ``known``
        of the next call, and what a Redis Cluster node down kept from being read (module
        docstring). Raise when no node answered.

        The layouts set is read in the round trip that reads the outboxes of the configured
        count and of ``known``: only a count not yet known costs one more, so a look every
        few seconds (the workflows thread's) costs what it did before there were counts
        (docs/scaling.md, Changing the shard count).
        """
        parts = [*(part for queue in queues for part in self.parts(queue)), *known]
        layouts = (("SMEMBERS", self.keyspace.layouts), RAW)
        recorded, *sizes = self._read_each([layouts, *self._outbox_reads(parts)])
        translated: dict[int, BrokerUnavailable] = {}  # one per node: its line is said once
        found, unread = self._sizes(parts, sizes, translated)
        if isinstance(recorded, redis.ResponseError):  # a key of another type: as other_parts
            raise self.translated(recorded, read=True)
        if isinstance(recorded, Exception):
            unread[self.keyspace.layouts] = self._why(recorded, translated)
            other = list(known)
        else:
            counts = self.other_parts_in(queues, recorded)
            other = [part for each in counts.values() for part in each]
        seen = set(known)
        if unseen := [part for part in other if part not in seen]:
            more, more_unread = self._sizes(unseen, self._read_each(self._outbox_reads(unseen)))
            found, unread = found + more, unread | more_unread
        return OutboxLook(found=found, other=other, unread=unread)

    def _outbox_reads(self, parts: Sequence[str]) -> list[Read]:
        return [(("LLEN", self.queue_keys(part).outbox), {}) for part in parts]

    def _sizes(
        self,
        parts: Sequence[str],
        sizes: Sequence[object],
        translated: dict[int, BrokerUnavailable] | None = None,
    ) -> tuple[list[str], dict[str, BrokerUnavailable]]:
        """Return those of ``parts`` whose outbox size in ``sizes`` is not 0, and those whose
        node did not answer, with why; warn of each outbox key of another type
        (``parts_with_outbox``), and raise any other error Redis answered. ``translated``:
        the errors translated already (``_why``)."""
        found: list[str] = []
        unread: dict[str, BrokerUnavailable] = {}
        translated = {} if translated is None else translated
        for part, size in zip(parts, sizes, strict=True):
            if isinstance(size, redis.ResponseError):
                if not wrong_type(size):
                    raise self.translated(size, read=True)
                logger.warning(
                    "Workflow outbox skipped, its key holds another type (delete it, or give "
                    "each project its own OPTIONS['key_prefix']); the other outboxes are "
                    "drained key=%s error=%s",
                    self.queue_keys(part).outbox,
                    reply_of(size),
                )
            elif isinstance(size, Exception):
                unread[part] = self._why(size, translated)
            elif size:
                found.append(part)
        return found, unread

    def _why(self, error: Exception, translated: dict[int, BrokerUnavailable]) -> BrokerUnavailable:
        """Return ``error``, a node's share's, translated once: the reads of one node share it,
        and its line (the workflow drainer's) is one."""
        if id(error) not in translated:
            translated[id(error)] = self.translated(error, read=True)
        return translated[id(error)]
