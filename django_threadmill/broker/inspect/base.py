"""The Inspector's core: its broker, the parts a query reads and their keys, the Redis clock.

The queries themselves live one job a module (queues.py, sightings.py, listing.py,
detail.py), each a class over this one, and inspector.py composes them. See the package
docstring for the rules every query follows.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

from ..broker import Broker
from ..connection import readable_replies
from ..keys import QueueKeys
from ..raw_replies import RAW, escaped
from ..types import stored_int
from .types import Fields

# Ids and records come back as bytes, decoded one by one (raw_replies.py): one that is not
# UTF-8, decoded by the client, failed the whole reply, and with it the page.
SCORED = {"withscores": True, **RAW}  # a sorted set's ids with their scores, as bytes
# What ``read_parts`` queues for one part: commands on a pipeline (untyped in redis-py), given
# the part's keys.
type PartRead = Callable[[Any, QueueKeys], object]


def stored_ints(values: list[bytes | None]) -> list[int | None]:
    """Read numbers read as bytes (``stored_int``): one that is not UTF-8 reads as unknown."""
    return [None if value is None else stored_int(escaped(value)) for value in values]


class InspectorBase:
    """The state and the helpers every query of the Inspector shares."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.client = broker.client
        self._record_prefixes: dict[str, str] = {}

    def _keys(self, part: str) -> QueueKeys:
        """Return the keys of a queue, or of one shard of a sharded queue (its part name)."""
        return self.broker.queue_keys(part)

    def parts(self, queue: str) -> list[str]:
        """Return the parts whose keys hold ``queue``: itself, or one per shard.

        Queries taking queue names sum a sharded queue's parts; the listing walks each part
        as its own index (a part name passed as a queue is its own only part).
        """
        return self.broker.parts(queue)

    def parts_to_sum(
        self, queues: Sequence[str], *, every_count: bool = False
    ) -> dict[str, list[str]]:
        """Return, per queue, the parts a query sums: those of its configured shard count,
        then, with ``every_count``, those of every other count it kept keys under.

        The admin's pages and the metrics sum every count, so the tasks, workers and counts of
        an earlier ``queue_shards`` stay in view until they are gone (docs/scaling.md,
        Changing the shard count).
        """
        other = self.broker.other_parts_in(queues, self.layouts) if every_count else {}
        return {queue: [*self.parts(queue), *other.get(queue, ())] for queue in queues}

    @cached_property
    def layouts(self) -> Iterable[bytes]:
        """The shard counts recorded, read once: an Inspector serves one page view or scrape
        (Source)."""
        return self.broker.recorded_layouts()

    def _record(self, task_id: str, found_in: Mapping[str, str] | None = None) -> str:
        """Return the record key of ``task_id``, in its part in ``found_in`` if given there
        (one of another shard count), building each part's prefix once."""
        part = (found_in or {}).get(task_id) or self.broker.part_of(task_id) or ""
        if part not in self._record_prefixes:
            self._record_prefixes[part] = self._keys(part).record_prefix
        return self._record_prefixes[part] + task_id

    def now_ms(self) -> int:
        """Return Redis server time in ms: the clock every score was written with."""
        return self.broker.server_time_ms()

    def read_parts(
        self,
        parts: Mapping[str, Sequence[str]],
        read: PartRead,
        *,
        tolerant: bool = False,
    ) -> Iterator[Any]:
        """Queue ``read``'s commands for the keys of each part of ``parts`` (queue by queue, in
        order) in one pipeline; return its replies in that order. With ``tolerant``, a command
        Redis refused (a key of another type) gives its error in place of its reply."""
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part in (part for queue_parts in parts.values() for part in queue_parts):
                read(pipe, self._keys(part))
            if tolerant:
                return iter(readable_replies(pipe.execute(raise_on_error=False)))
            return iter(pipe.execute())

    def _hmget(self, keys: Sequence[str], fields: Sequence[str]) -> list[Fields]:
        """Return ``fields`` of each record key, None where the key is not a hash: one pipeline."""
        if not keys:
            return []
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for key in keys:
                pipe.execute_command("HMGET", key, *fields, **RAW)
            replies = readable_replies(pipe.execute(raise_on_error=False))
        return [
            None
            if isinstance(reply, Exception)
            else [None if v is None else escaped(v) for v in reply]
            for reply in replies
        ]
