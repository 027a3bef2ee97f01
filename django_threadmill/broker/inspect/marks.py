"""Find where a listing's last seen entry lies in an index now, so its next page starts there.

Pages of an index whose entries come and go (tasks start, finish, arrive, are requeued) start
after the (score, id) seen last, not at a rank: a rank counts the entries that left or arrived
before it, so the next page repeated or skipped tasks that stayed (docs/admin.md, Tasks).
"""

from collections.abc import Mapping
from dataclasses import dataclass

from .inspector import Inspector
from .types import Index


@dataclass(frozen=True, slots=True)
class Mark:
    """The last entry a page walked in one index: its score and id as the index holds them."""

    score: float
    task_id: str

    @property
    def member(self) -> bytes:
        """Return the id as Redis stores it (a hand-made id may hold any code point)."""
        return self.task_id.encode("utf-8", "surrogatepass")


def _bound(score: float, exclusive: bool) -> str:
    """Return ``score`` as a ZCOUNT bound ("(" makes it exclusive)."""
    return f"({score!r}" if exclusive else repr(score)


def ranks_through(inspector: Inspector, index: Index, marks: Mapping[str, Mark]) -> dict[str, int]:
    """Return, per part, how many entries of its ``index`` lie up to and including its mark in
    the index's walking order (newest first for the done index), the mark's entry counted only
    while it is still there with its score.

    One pipeline of ZSCORE, ZRANK and counts; a mark whose entry left, among others of its
    score, is placed among them by a binary search of single-entry reads (Redis orders equal
    scores by id).
    """
    parts = list(marks)
    with inspector.broker.translated_errors(read=True), inspector.client.pipeline(False) as pipe:
        for part in parts:
            key, mark = getattr(inspector.broker.queue_keys(part), index.value), marks[part]
            pipe.zscore(key, mark.member)
            pipe.zrank(key, mark.member)
            pipe.zcount(key, "-inf", _bound(mark.score, exclusive=True))
            pipe.zcount(key, "-inf", _bound(mark.score, exclusive=False))
            pipe.zcard(key)
        replies = iter(pipe.execute())
    through = {}
    for part in parts:
        score, rank, below, up_to, size = (next(replies) for _ in range(5))
        mark = marks[part]
        present = score is not None and float(score) == mark.score
        before = int(rank) if present else _among_ties(inspector, index, part, mark, below, up_to)
        # Ascending: the entries before the mark, and it; newest first: it and those after it.
        through[part] = int(size) - before if index.newest_first else before + present
    return through


def _among_ties(
    inspector: Inspector, index: Index, part: str, mark: Mark, low: int, high: int
) -> int:
    """Return how many entries sort before ``mark`` (ascending), given that ``low`` have a
    lower score and ``high`` a score no higher."""
    key = getattr(inspector.broker.queue_keys(part), index.value)
    with inspector.broker.translated_errors(read=True):
        while low < high:
            middle = (low + high) // 2
            [member] = inspector.broker.raw_command("ZRANGE", key, middle, middle) or [None]
            if member is None:  # the index shrank meanwhile: place the mark at its end
                return middle
            low, high = (middle + 1, high) if member < mark.member else (low, middle)
    return low
