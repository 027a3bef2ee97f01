"""The Inspector's read of one task: its record, TTL and index positions, in any shard count.

See the package docstring for the rules every query here follows.
"""

from collections.abc import Collection, Sequence

from ...codec.ids import queue_of
from ..connection import readable_replies
from ..keys import part_shards
from ..raw_replies import escaped
from ..reads import damaged_record
from ..types import stored_int
from .base import InspectorBase
from .located import located
from .record import RecordValues, not_utf8, read_values
from .types import TaskDetail


class TaskReads(InspectorBase):
    """The one task a task page shows, found under any shard count its queue was used with."""

    def detail(self, task_id: str, *, whole: Collection[str] = ()) -> TaskDetail | None:
        """Return the record of ``task_id`` with its TTL and index positions, or None.

        Its values are read up to DETAIL_READ_BYTES in all (``read_values``); the fields in
        ``whole`` are read up to SHOW_ALL_BYTES each, for a page that serves one value whole.
        A record not in its configured shard count's part is looked for in those of the other
        counts its queue was used with (``located``), so its page opens after a change of
        ``queue_shards`` (docs/scaling.md, Changing the shard count).
        """
        part = self.broker.part_of(task_id)
        found = None if part is None else self._detail(task_id, part, whole)
        if found is None and part is not None:
            elsewhere = self.located([task_id]).get(task_id, part)
            found = None if elsewhere == part else self._detail(task_id, elsewhere, whole)
        return found

    def _detail(self, task_id: str, part: str, whole: Collection[str]) -> TaskDetail | None:
        """Return ``detail`` of ``task_id`` read in ``part``, or None if it holds no record."""
        queue = queue_of(task_id) or ""
        keys = self._keys(part)
        key = keys.record(task_id)
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            pipe.hlen(key)
            pipe.pttl(key)
            pipe.zscore(keys.leases, task_id)
            pipe.zscore(keys.delayed, task_id)
            pipe.zrank(keys.ready, task_id)
            pipe.type(key)
            replies = readable_replies(pipe.execute(raise_on_error=False))
        count, ttl_ms, deadline, due, position, kind = replies
        if not count:
            return None
        damaged = isinstance(count, Exception)
        read = RecordValues({}, {}, "") if damaged else read_values(self.broker, key, count, whole)
        if not (damaged or read.values or read.unread):
            return None  # it expired between the reads
        return TaskDetail(
            id=task_id,
            queue=queue,
            key=key,
            record={escaped(name): escaped(value) for name, value in read.values.items()},
            unread={escaped(name): size for name, size in read.unread.items()},
            ttl_ms=int(ttl_ms) if int(ttl_ms) >= 0 else None,
            lease_deadline_ms=stored_int(deadline),
            due_ms=stored_int(due),
            ready_position=position,
            damaged=str(damaged_record(task_id, key, kind)) if damaged else "",
            not_utf8=not_utf8(task_id, key, {**dict.fromkeys(read.unread, b""), **read.values}),
            fields_left_out=read.fields_left_out,
            shards=part_shards(part),
        )

    def located(self, task_ids: Sequence[str]) -> dict[str, str]:
        """Return those of ``task_ids`` that have a record, each with the part holding it,
        under any shard count its queue was used with (``located.located``)."""
        return located(self.broker, task_ids, self.layouts)
