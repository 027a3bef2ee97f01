"""The Inspector's worker sightings: the processes that renewed leases in a queue, bounded.

See the package docstring for the rules every query here follows.
"""

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from ..connection import ANOTHER_TYPE_FIX, readable_replies
from ..raw_replies import RAW, escaped
from ..script_errors import reply_of
from .base import SCORED, InspectorBase, stored_ints
from .types import HostSightings, WorkerSighting

logger = logging.getLogger(__name__)

MAX_SIGHTINGS = 1000  # latest worker sightings read per queue part (admin, health, metrics)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Sighted:
    """What ``_sighted`` read of some parts."""

    latest: dict[str, list[tuple[str, float]]]  # each part's sightings, most recent first
    signed_off: list[int]  # when a process of the host asked last signed off, per part
    unread: list[str]  # keys of another type, whose part's sightings are left out


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
        sighted = self._sighted(every_part, live_from_ms)
        return self._sightings(parts, sighted.latest, counts)

    def host_sightings(self, queues: Sequence[str], host: str, live_from_ms: int) -> HostSightings:
        """Return ``workers(queues, counts=False, live_from_ms=live_from_ms)``, when a process
        of ``host`` last signed off in ``queues`` and the keys left out, all read in the same
        round trip: a stopped process leaves no sighting, and threadmill_health still says
        when its host was last seen."""
        parts = {queue: self.parts(queue) for queue in queues}
        every_part = [part for queue in queues for part in parts[queue]]
        sighted = self._sighted(every_part, live_from_ms, signed_off_by=host)
        return HostSightings(
            sightings=self._sightings(parts, sighted.latest, counts=False),
            signed_off_ms=max(sighted.signed_off, default=None),
            unread=tuple(sighted.unread),
        )

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
    ) -> _Sighted:
        """Read the sightings of ``parts`` in one round trip: the newest MAX_SIGHTINGS, or with
        ``live_from_ms`` every one since then and the newest MAX_SIGHTINGS before it; with
        ``signed_off_by``, when a process of that host last signed off in each part that
        kept it too.

        A part whose ``workers`` or ``stopped`` key holds another type is left out, with a
        WARNING naming the key: raised, that key failed the read of every queue, and with it
        the health probe, the queues page and the scrape (docs/lifecycle.md, Keys of another
        type).
        """
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
            replies = iter(readable_replies(pipe.execute(raise_on_error=False)))
        asked = [next(replies) for _ in parts] if signed_off_by is not None else [None] * len(parts)
        per_part = 1 if live_from_ms is None else 2
        sighted = _Sighted(latest={}, signed_off=[], unread=[])
        for part, stopped in zip(parts, asked, strict=True):
            ranges = [next(replies) for _ in range(per_part)]
            unread = self._unread(part, stopped, ranges[0])
            sighted.unread.extend(unread)
            if unread:
                sighted.latest[part] = []
                continue
            sighted.latest[part] = [
                (escaped(worker_id), score)
                for reply in ranges
                for worker_id, score in reply
                if math.isfinite(score)  # a score written by hand (inf) is no renewal time
            ]
            if stopped is not None and math.isfinite(stopped):
                sighted.signed_off.append(int(stopped))
        return sighted

    def _unread(self, part: str, stopped: object, sightings: object) -> list[str]:
        """Return the keys of ``part`` whose reply (``stopped``'s, or ``sightings``, the first
        read of its ``workers``) is a key of another type refused, logging each: the only
        error ``readable_replies`` leaves in place."""
        keys = self._keys(part)
        unread = []
        for key, reply in ((keys.stopped, stopped), (keys.workers, sightings)):
            if isinstance(reply, redis.ResponseError):
                _say_skipped("Worker sightings", "the other queues' are read", key, reply)
                unread.append(key)
        return unread

    def _held_and_threads(self, latest: dict[str, list[tuple[str, float]]]) -> list[Any]:
        """Read, per part, what its sighted workers hold and their thread counts: two HMGETs
        each, in one round trip. A key of another type reads as no counts, with a WARNING
        naming it: raised, it failed the queues page and the scrape (docs/lifecycle.md, Keys
        of another type)."""
        asked: list[tuple[str, int]] = []  # each HMGET's key and how many ids it asks
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part, sighted in latest.items():
                ids = [worker_id for worker_id, _ in sighted] or [""]  # HMGET needs one
                for key in (self._keys(part).held, self._keys(part).threads):
                    pipe.execute_command("HMGET", key, *ids, **RAW)
                    asked.append((key, len(ids)))
            replies = readable_replies(pipe.execute(raise_on_error=False))
        return [_counts(key, reply, n) for (key, n), reply in zip(asked, replies, strict=True)]


def _counts(key: str, reply: Any, asked: int) -> list[int | None]:
    """Return the counts an HMGET of ``asked`` ids read from ``key``: none if it holds another
    type, said once per read."""
    if isinstance(reply, redis.ResponseError):
        _say_skipped("Worker counts", "the workers are listed without them", key, reply)
        return [None] * asked
    return stored_ints(reply)


def _say_skipped(what: str, meanwhile: str, key: str, reply: redis.ResponseError) -> None:
    """Log that ``what`` of ``key`` are skipped, as it holds another type."""
    logger.warning(
        "%s skipped, their key holds another type (" + ANOTHER_TYPE_FIX + "); %s key=%s error=%s",
        what,
        meanwhile,
        key,
        reply_of(reply),
    )
