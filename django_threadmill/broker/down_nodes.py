"""Remember the Redis Cluster nodes that could not be reached, so rounds go on without them.

A primary down with no replica to take over (``cluster-require-full-coverage no``) costs each
call to it redis-py's connection retries with backoff, seconds long, and a round that spans
queues waited that long for the nodes still serving (docs/scaling.md, Batches that span
queues). A node whose share of a round met a connection error is remembered by its address for
an interval that doubles while it stays away, from ``FIRST_INTERVAL_S`` to
``LONGEST_INTERVAL_S``. Meanwhile a round that includes it sends the other shares at once and
fails its share at once, as retryable as the error it met (calls.py). Once the interval is over,
one caller looks again with one PING, which redis-py sends once to a node named as its target:
an answer forgets the node, a refusal makes redis-py read the slot map again before its next
command, so a replica that took over the node's slots is learned, and its shares go there.
"""

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import redis

from ..forks import ForkSafeLock

FIRST_INTERVAL_S = 0.5  # how long a node that just failed to connect is spared
LONGEST_INTERVAL_S = 4.0  # the interval doubles up to this while the node stays away


def by_node[E](unread: Mapping[str, E]) -> dict[E, list[str]]:
    """Return the names in ``unread`` (queues, queue parts, keys) under the error each met: one
    error per node that did not answer, so its line names them all once."""
    grouped: dict[E, list[str]] = {}
    for name, error in unread.items():
        grouped.setdefault(error, []).append(name)
    return grouped


class NodeSpared(redis.ConnectionError):
    """A share not sent to a node remembered as unreachable. Its words say "connecting to", as
    redis-py's do when a connection did not open: translated, it says nothing was written."""


@dataclass(slots=True)
class _Away:
    error: str  # what the node's last share or look met
    interval_s: float
    look_at: float  # on the clock: when a caller may look at it again
    looking: bool = False  # a caller looks at it now


class DownNodes:
    """The nodes of one backend that could not be reached lately, by name ("host:port").

    Thread-safe, and no method waits: the sync client's threads and the asyncio clients'
    event loops share it.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._away: dict[str, _Away] = {}
        self._lock = ForkSafeLock()  # a child's first call to the cluster takes it

    def spares_any(self, nodes: Iterable[str]) -> bool:
        """Tell whether any of ``nodes`` is remembered: a round for them goes share by share.
        With none remembered, the usual case, no lock is taken (a dict's size reads whole)."""
        if not self._away:
            return False
        with self._lock:
            return any(node in self._away for node in nodes)

    def look_first(self, node: str) -> bool:
        """Return True when the caller is to look at ``node`` before sending it its share (its
        interval is over: the other callers are spared another interval meanwhile), False
        when it is not remembered; raise ``NodeSpared`` while it is spared."""
        now = self._clock()
        with self._lock:
            away = self._away.get(node)
            if away is None:
                return False
            if now >= away.look_at:
                away.look_at, away.looking = now + away.interval_s, True
                return True
            error, left_s = away.error, away.look_at - now
        raise NodeSpared(
            f"Error connecting to {node}: not tried again for {left_s:.1f}s, as it failed "
            f"lately ({error})"
        )

    def failed(self, node: str | None, error: Exception) -> None:
        """Remember ``node`` after its share or look met a connection ``error``: for the first
        interval, or twice the last one after a look. None: a share redis-py routed itself."""
        if node is None or type(error) is not redis.ConnectionError:
            return  # an error of the call, not of the connection; NodeSpared was not sent
        now = self._clock()
        with self._lock:
            away = self._away.get(node)
            if away is not None and not away.looking:  # a call sent before it was remembered
                away.error = str(error)
                return
            interval_s = (
                FIRST_INTERVAL_S if away is None else min(away.interval_s * 2, LONGEST_INTERVAL_S)
            )
            self._away[node] = _Away(str(error), interval_s, now + interval_s)

    def answered(self, node: str | None) -> None:
        """Forget ``node``: its share or its look got an answer."""
        if node is not None:
            with self._lock:
                self._away.pop(node, None)
