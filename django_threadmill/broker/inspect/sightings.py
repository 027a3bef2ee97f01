"""The Inspector's worker sightings: the processes that renewed leases in a queue, bounded.

See the package docstring for the rules every query here follows.
"""

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..raw_replies import RAW, escaped
from .base import SCORED, InspectorBase, stored_ints
from .types import WorkerSighting

MAX_SIGHTINGS = 1000  # latest worker sightings read per queue part (admin, health, metrics)


class SightingReads(InspectorBase):
    """The workers seen in queues, for the admin, threadmill_health and the metrics."""

    def workers(
        self,
        queues: Sequence[str],
        *,
        counts: bool = True,
        live_from_ms: int | None = None,
        every_count: bool = False,
    ) -> list[WorkerSighting]:
        """Return the workers that renewed leases in ``queues``, most recent first: at most
        MAX_SIGHTINGS per queue part, so the reads stay bounded however many processes came
        and went (each start adds a sighting, kept a day). With ``live_from_ms``, every
        sighting renewed since then too, however many: a count of the live processes of one
        host (threadmill_health) must not miss those ranked past MAX_SIGHTINGS by a larger
        fleet (docs/deploy.md, Health).

        A worker of a sharded queue renews in every shard: it is one sighting per queue, its
        held tasks summed, its latest renewal and its thread count (the same in every shard) kept.
        Without ``counts`` the held tasks and threads are not read (0 each): one round trip,
        all a health probe, which must answer within its timeout, asks. With ``every_count``,
        the workers of every shard count too (``parts_to_sum``).
        """
        parts = self.parts_to_sum(queues, every_count=every_count)
        every_part = [part for queue in queues for part in parts[queue]]
        latest, _ = self._sighted(every_part, live_from_ms)
        return self._sightings(parts, latest, counts)

    def host_sightings(
        self, queues: Sequence[str], host: str, live_from_ms: int
    ) -> tuple[list[WorkerSighting], int | None]:
        """Return ``workers(queues, counts=False, live_from_ms=live_from_ms)`` and when a
        process of ``host`` last signed off in ``queues`` (ms, Redis clock; None: not within
        a day), read in the same round trip: a stopped process leaves no sighting, and
        threadmill_health still says when its host was last seen."""
        parts = {queue: self.parts(queue) for queue in queues}
        every_part = [part for queue in queues for part in parts[queue]]
        latest, signed_off = self._sighted(every_part, live_from_ms, signed_off_by=host)
        return self._sightings(parts, latest, counts=False), max(signed_off, default=None)

    def _sightings(
        self,
        parts: dict[str, list[str]],
        latest: dict[str, list[tuple[str, float]]],
        counts: bool,
    ) -> list[WorkerSighting]:
        """Return one sighting per worker and queue of ``parts`` from ``latest``, the sightings
        of each part, most recent first; with ``counts``, what each holds and its threads."""
        replies = iter(self._held_and_threads(latest) if counts else [])
        sightings = []
        for queue in parts:
            held_by: dict[str, int] = defaultdict(int)
            threads_of: dict[str, int] = defaultdict(int)
            renewed_at: dict[str, int] = {}
            for part in parts[queue]:
                unread = [None] * len(latest[part])
                held, threads = (next(replies), next(replies)) if counts else (unread, unread)
                for (worker_id, score), held_n, threads_n in zip(
                    latest[part], held, threads, strict=False
                ):
                    held_by[worker_id] += held_n or 0
                    threads_of[worker_id] = max(threads_n or 0, threads_of[worker_id])
                    renewed_at[worker_id] = max(int(score), renewed_at.get(worker_id, 0))
            sightings += [
                WorkerSighting(
                    worker_id=worker_id,
                    queue=queue,
                    held=held_by[worker_id],
                    threads=threads_of[worker_id],
                    last_renewal_ms=last_ms,
                )
                for worker_id, last_ms in renewed_at.items()
            ]
        return sorted(sightings, key=lambda s: s.last_renewal_ms, reverse=True)

    def _sighted(
        self, parts: Sequence[str], live_from_ms: int | None, signed_off_by: str | None = None
    ) -> tuple[dict[str, list[tuple[str, float]]], list[int]]:
        """Read the sightings of ``parts`` in one round trip: the newest MAX_SIGHTINGS, or with
        ``live_from_ms`` every one since then and the newest MAX_SIGHTINGS before it; with
        ``signed_off_by``, when a process of that host last signed off in each part that
        kept it too."""
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            if signed_off_by is not None:
                for part in parts:
                    pipe.zscore(self._keys(part).stopped, signed_off_by)
            for part in parts:
                key = self._keys(part).workers
                if live_from_ms is None:
                    pipe.execute_command(
                        "ZREVRANGE", key, 0, MAX_SIGHTINGS - 1, "WITHSCORES", **SCORED
                    )
                    continue
                pipe.execute_command(
                    "ZREVRANGEBYSCORE", key, "+inf", live_from_ms, "WITHSCORES", **SCORED
                )
                silent = (f"({live_from_ms}", "-inf", "WITHSCORES", "LIMIT", 0, MAX_SIGHTINGS)
                pipe.execute_command("ZREVRANGEBYSCORE", key, *silent, **SCORED)
            replies = iter(pipe.execute())
        asked = [next(replies) for _ in parts] if signed_off_by is not None else []
        signed_off = [int(ms) for ms in asked if ms is not None and math.isfinite(ms)]
        per_part = 1 if live_from_ms is None else 2
        sightings = {
            part: [
                (escaped(worker_id), score)
                for _ in range(per_part)
                for worker_id, score in next(replies)
                if math.isfinite(score)  # a score written by hand (inf) is no renewal time
            ]
            for part in parts
        }
        return sightings, signed_off

    def _held_and_threads(self, latest: dict[str, list[tuple[str, float]]]) -> list[Any]:
        """Read, per part, what its sighted workers hold and their thread counts: two HMGETs
        each, in one round trip."""
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part, sighted in latest.items():
                ids = [worker_id for worker_id, _ in sighted] or [""]  # HMGET needs one
                pipe.execute_command("HMGET", self._keys(part).held, *ids, **RAW)
                pipe.execute_command("HMGET", self._keys(part).threads, *ids, **RAW)
            return [stored_ints(counts) for counts in pipe.execute()]
