"""The Inspector's listing reads: index sizes and windows, and the rows a list page shows.

See the package docstring for the rules every query here follows.
"""

from collections.abc import Iterable, Mapping, Sequence

from ...codec.ids import queue_of
from ...codec.payloads import PATH_HEAD_BYTES, task_path_in_head
from ...codec.progress import PROGRESS_FIELDS, stored_progress
from ..raw_replies import NotUtf8Id, escaped, stored_scored_ids
from ..types import stored_int
from .base import SCORED, InspectorBase
from .steps import StepRecord, step_records
from .types import Fields, Index, TaskRow

ROW_FIELDS = (
    "state",
    "payload",
    "enqueued_ms",
    "started_ms",
    "finished_ms",
    "workers",
    "nerrors",
    *PROGRESS_FIELDS,
)


class ListingReads(InspectorBase):
    """One window of an index at a time, and the fields of the records it holds."""

    def index_size(self, index: Index, parts: Sequence[str], as_of_ms: int | None) -> int:
        """Return how many ids ``index`` holds over ``parts`` (done: finished by ``as_of_ms``)."""
        return sum(self.sizes(index, parts, as_of_ms).values())

    def sizes(self, index: Index, parts: Sequence[str], as_of_ms: int | None) -> dict[str, int]:
        """Return, per part, how many ids its ``index`` holds (done: finished by ``as_of_ms``).

        A listing walking back from a cursor caps the cursor's ranks at these.
        """
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part in parts:
                key = getattr(self._keys(part), index.value)
                if as_of_ms is None:
                    pipe.zcard(key)
                else:
                    pipe.zcount(key, "-inf", as_of_ms)
            return {p: int(n) for p, n in zip(parts, pipe.execute(), strict=True)}

    def ranks_after(self, index: Index, queues: Sequence[str], as_of_ms: int) -> dict[str, int]:
        """Return, per queue, how many ids of a newest-first index are newer than ``as_of_ms``.

        A listing counts its positions from there, so results finishing while someone pages
        do not shift the pages.
        """
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for queue in queues:
                pipe.zcount(getattr(self._keys(queue), index.value), f"({as_of_ms}", "+inf")
            return {q: int(n) for q, n in zip(queues, pipe.execute(), strict=True)}

    def windows(
        self, index: Index, ranges: dict[str, tuple[int, int]]
    ) -> dict[str, list[tuple[str, float]]]:
        """Return ids and scores at ranks ``start..stop`` (inclusive) of each queue's index."""
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for queue, (start, stop) in ranges.items():
                key = getattr(self._keys(queue), index.value)
                command = "ZREVRANGE" if index.newest_first else "ZRANGE"
                pipe.execute_command(command, key, start, stop, "WITHSCORES", **SCORED)
            return {
                q: stored_scored_ids(found) for q, found in zip(ranges, pipe.execute(), strict=True)
            }

    def _listed_fields(
        self, ids: Sequence[str], fields: Sequence[str], found_in: Mapping[str, str] | None
    ) -> list[Fields]:
        """Return ``fields`` of the record of each of ``ids``: None where its key is not a hash,
        and for an id that is not UTF-8 (``NotUtf8Id``), which names no record and is not read.

        A ``payload`` among them is its first PATH_HEAD_BYTES only (``task_path_in_head``).
        """
        readable = [task_id for task_id in ids if not isinstance(task_id, NotUtf8Id)]
        found = iter(self._fields_of(readable, fields, found_in))
        return [None if isinstance(task_id, NotUtf8Id) else next(found) for task_id in ids]

    def _fields_of(
        self, ids: Sequence[str], fields: Sequence[str], found_in: Mapping[str, str] | None
    ) -> list[Fields]:
        """Return ``fields`` of each record of ``ids``, a payload cut to its head: a page of 50
        rows of 2 MB payloads read 100 MB for their task paths (docs/admin.md, Cost per page
        view)."""
        if "payload" not in fields:
            return self._hmget([self._record(task_id, found_in) for task_id in ids], fields)
        replies = self.broker.cut_fields(ids, fields, "payload", PATH_HEAD_BYTES, found_in)
        return [
            None if reply is None else [None if v is None else escaped(v) for v in reply]
            for reply in replies
        ]

    def probe(
        self, ids: Sequence[str], fields: Sequence[str], found_in: Mapping[str, str] | None = None
    ) -> list[dict[str, str | None] | None]:
        """Return ``fields`` of each record of ``ids`` (all None where it is gone, None where
        its key is not a hash or its id is not UTF-8), each in its part in ``found_in`` if
        given there: one pipeline.

        A filtered listing reads only what its filter needs, then whole rows for the matches.
        """
        replies = self._listed_fields(ids, fields, found_in)
        return [
            None if values is None else dict(zip(fields, values, strict=True)) for values in replies
        ]

    def rows(
        self, ids: Iterable[str], found_in: Mapping[str, str] | None = None
    ) -> dict[str, TaskRow | None]:
        """Return the listing fields of each id (None where the record is gone, a ``DAMAGED``
        row where its key is not a hash or its id is not UTF-8), each read in its part in
        ``found_in`` if given there (one of another shard count): one pipeline."""
        wanted = list(ids)
        replies = self._listed_fields(wanted, ROW_FIELDS, found_in)
        return {
            task_id: self._row(task_id, values, self._stored_elsewhere(task_id, found_in))
            for task_id, values in zip(wanted, replies, strict=True)
        }

    def _stored_elsewhere(self, task_id: str, found_in: Mapping[str, str] | None) -> bool:
        """Whether ``found_in`` puts ``task_id`` where its configured shard count does not."""
        part = (found_in or {}).get(task_id)
        return part is not None and part != self.broker.part_of(task_id)

    @staticmethod
    def _row(task_id: str, values: Fields, stored_elsewhere: bool) -> TaskRow | None:
        if values is None:
            return TaskRow.unreadable(task_id, queue_of(task_id) or "")
        fields = dict(zip(ROW_FIELDS, values, strict=True))
        if not fields["state"]:
            return None
        return TaskRow(
            id=task_id,
            queue=queue_of(task_id) or "",
            stored_elsewhere=stored_elsewhere,
            state=fields["state"] or "",
            path=task_path_in_head(fields["payload"]),
            enqueued_ms=stored_int(fields["enqueued_ms"]),
            started_ms=stored_int(fields["started_ms"]),
            finished_ms=stored_int(fields["finished_ms"]),
            attempts=len(fields["workers"].split("\n")) if fields["workers"] else 0,
            errors=stored_int(fields["nerrors"]) or 0,
            progress=stored_progress(fields),
        )

    def step_records(self, ids: Sequence[str], most_bytes: int) -> list[StepRecord | None]:
        """Return what a workflow's page shows of its steps' records (``steps.step_records``):
        the state, and the payload and result of at most ``most_bytes`` each."""
        return step_records(self.broker, ids, most_bytes)
