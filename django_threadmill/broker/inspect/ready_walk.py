"""The oldest-ready walk: when the longest-waiting READY task of a queue part became ready,
read from the heads of its priority bands, never a scan of the set (docs/admin.md, Queues)."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..broker import Broker
from ..keys import QueueKeys
from ..raw_replies import RAW, stored_id, stored_scored_ids
from ..scripts import lua_constant
from ..types import stored_int
from .types import Fields

# A ready score is (100 - priority) * PRIORITY_STEP + seq (common.lua, enqueue.lua).
PRIORITY_STEP = lua_constant("PRIORITY_STEP")
MAX_PRIORITY_BANDS = 201  # priorities -100..100: the most bands the oldest-ready walk visits
# Enqueue writes ready scores in [0, BANDS_END); one outside (negative, past the last band, or
# ±inf: by hand) is read apart, as it has no band (docs/admin.md, Queues).
BANDS_END = MAX_PRIORITY_BANDS * PRIORITY_STEP
BAND_SAMPLE = 100  # ready ids read from the head of each priority band for the oldest-ready age
# Where a ready task's wait began: ready_ms (a retry's due time, a requeue) when written, else
# the later of its enqueue and its run_after.
READY_SINCE_FIELDS = ("enqueued_ms", "run_after_ms", "ready_ms")


def oldest_ready_since(fields_by_id: dict[str, Fields], truncated: list[str]) -> int | None:
    """Return the earliest wait start of the ids read (``READY_SINCE_FIELDS`` of each), and of
    the ids after each ``truncated`` band's last one read; None if none is known."""
    since = [_ready_since(values) for values in fields_by_id.values()]
    # A truncated band's unread ids were enqueued after its last id read (enqueued_ms).
    floors = [fields_by_id[task_id] for task_id in truncated]
    since += [stored_int(values[0]) for values in floors if values]
    known = [ms for ms in since if ms is not None]
    return min(known) if known else None


def _ready_since(fields: Fields) -> int | None:
    """Return when a ready task's wait began (``READY_SINCE_FIELDS`` read), None if unknown."""
    if not fields:
        return None
    enqueued, run_after, ready = (stored_int(value) for value in fields)
    if ready is not None:
        return ready
    if enqueued is None or run_after is None:
        return enqueued
    return max(enqueued, run_after)


@dataclass(slots=True)
class _BandWalk:
    """One queue part's walk down the priority bands of its ready set."""

    keys: QueueKeys
    sampled: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    low: int | None = 0  # the score the next read starts at; None once the set is read

    def outlier_reads(self) -> tuple[tuple[str | int, ...], ...]:
        """Return the reads of the BAND_SAMPLE lowest ready ids scored below the bands and of
        the BAND_SAMPLE highest scored past them."""
        ready = self.keys.ready
        return (
            ("ZRANGEBYSCORE", ready, "-inf", "(0", "LIMIT", 0, BAND_SAMPLE),
            ("ZREVRANGEBYSCORE", ready, "+inf", BANDS_END, "LIMIT", 0, BAND_SAMPLE),
        )

    def read(self) -> tuple[str | int, ...]:
        """Return the next ZRANGEBYSCORE: up to BAND_SAMPLE ids from ``low`` on."""
        assert self.low is not None
        ready, end = self.keys.ready, f"({BANDS_END}"
        return ("ZRANGEBYSCORE", ready, self.low, end, "WITHSCORES", "LIMIT", 0, BAND_SAMPLE)

    def take(self, chunk: list[tuple[str, float]]) -> None:
        """Keep the band heads of a read, and step to the next band (``low``) or stop."""
        bands = [int(score) // PRIORITY_STEP for _, score in chunk]
        ids = [task_id for task_id, _ in chunk]
        if len(chunk) < BAND_SAMPLE:  # the rest of the set
            self.sampled += ids
            self.low = None
        elif bands[0] == bands[-1]:  # one band, with more ids than the sample
            self.sampled += ids
            self.truncated.append(ids[-1])
            self.low = (bands[-1] + 1) * PRIORITY_STEP
        else:  # the last band read may go on: read it again from its head
            cut = bands.index(bands[-1])
            self.sampled += ids[:cut]
            self.low = bands[-1] * PRIORITY_STEP


def band_heads(broker: Broker, parts: Sequence[QueueKeys]) -> list[tuple[list[str], list[str]]]:
    """Return, per queue part, the first BAND_SAMPLE ids of each priority band of its ready
    set, and the last id read of each band holding more: one ZRANGEBYSCORE a band at most.

    The parts walk in step, one pipeline per step (split by node on a Redis Cluster): a
    scrape of fifty queues makes the round trips of its longest walk, not fifty walks. Ids
    scored outside the bands are among the first, BAND_SAMPLE from each end (read in the
    first step), none of them a band's last: an infinite score has no band, and stepping past
    it failed the queues page.
    """
    walks = [_BandWalk(keys) for keys in parts]
    for step in range(MAX_PRIORITY_BANDS):
        walking = [walk for walk in walks if walk.low is not None]
        if not walking:
            break
        with broker.translated_errors(read=True), broker.client.pipeline(transaction=False) as pipe:
            outliers = walks if step == 0 else []
            for read in (read for walk in outliers for read in walk.outlier_reads()):
                pipe.execute_command(*read, **RAW)
            for walk in walking:
                pipe.execute_command(*walk.read(), withscores=True, **RAW)
            replies = iter(pipe.execute())
        for walk in outliers:
            lowest, highest = next(replies), next(replies)
            walk.sampled += [stored_id(task_id) for task_id in (*lowest, *highest)]
        for walk in walking:
            walk.take(stored_scored_ids(next(replies)))
    return [(walk.sampled, walk.truncated) for walk in walks]
