"""When a reaping loop holds off settling expired leases: after Redis was away, refused writes,
restarted or failed over, or after the loop itself stalled, live workers get the time to renew
theirs first (docs/lifecycle.md, After an outage or a stall)."""

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..broker.connection import refuses_writes, slot_not_served
from ..broker.server_identity import ServerSeen
from ..exceptions import BrokerUnavailable
from .leases import RESUME_CHECK_S, lease_clock
from .reap_report import ReapReport
from .reaper import reap_pass

if TYPE_CHECKING:
    from ..backend import ThreadmillTaskBackend

logger = logging.getLogger(__name__)

# Past a renewal interval, what a worker may still need to renew once Redis answers or its host
# resumes: it looks at its lease clock every RESUME_CHECK_S, then makes a round trip or two.
RENEWAL_SLACK_S = RESUME_CHECK_S + 1.0
# The shortest gap taken for a stall, whatever the renewal interval: under a second, a busy
# host's scheduler, not a stall; and a loop late that often would never settle a short lease.
SHORTEST_STALL_S = 1.0


class ReapHold:
    """Run a reaping loop's passes, each settling expired leases unless a hold is on.

    A lease lapses by the Redis clock, which ran on while Redis was away or refused writes
    (no worker could renew) or while this host was stalled (a paused VM, a frozen container:
    its workers were stalled too). A worker renews as soon as it can: it retries a failed
    renewal at least once a renewal interval (``renewal_s``, a third of ``lease_ttl``) and
    looks at its lease clock every RESUME_CHECK_S. So after a pass Redis did not answer or
    refused writes in, or once the loop was seen not running for more than a renewal interval
    (and SHORTEST_STALL_S; ``tick`` at least every ``tick_s``), a hold of a renewal interval
    and RENEWAL_SLACK_S starts with the next pass: until it ends, passes settle no lease, and
    a lease still expired then has no live worker. A restart or a failover of Redis is an
    outage a loop may not have seen (it came between two passes, or before the first): every
    pass asks Redis how long ago reapers first saw its server, and holds until that is a
    hold's length ago. That answer also tells how far the Redis clock ran since the last pass:
    ahead of this host's lease clock by more than a renewal interval, Redis's clock jumped (a
    step of its host's clock), every lease lapsed early by the jump, and the pass holds too.
    Otherwise a loop's first pass holds nothing.

    On a Redis Cluster whose node of the note (``{alias}``) does not answer, no pass can ask
    when reapers first saw the primaries that answer: the loop goes by when it first saw them
    itself, so its first pass holds (a ``--once`` always does), and so does the pass after
    the note's node is back, whose queues' workers renew first.
    """

    def __init__(self, renewal_s: float, clock: Callable[[], float] = lease_clock) -> None:
        self.renewal_s = renewal_s
        self.tick_s = renewal_s / 2
        self._stall_s = max(renewal_s, SHORTEST_STALL_S)  # a longer gap is a stall
        self._clock = clock  # runs on through a suspend, as the Redis clock does
        self._seen_at: float | None = None  # when the loop was last seen running
        self._stalled_s = 0.0  # the longest stall since the last pass
        # The last pass's answer of how long ago its server was first seen, and when, on the
        # clock: that answer is a Redis time less a fixed one while the server is the same.
        self._server_seen: tuple[float, float] | None = None
        self._outage = ""  # why the last pass counts as an outage, if it does
        # While the note cannot be read: the server the loop saw, and its Redis time then (ms).
        self._seen_here: tuple[str, int] | None = None
        self.unnoted: BrokerUnavailable | None = None  # why the last pass read no note
        self._until = -math.inf  # the hold's end, on the clock
        self.held = ""  # why the last pass settled no lease ("" when it settled them)

    @property
    def hold_s(self) -> float:
        """How long a hold lasts: a renewal interval and the slack past it."""
        return self.renewal_s + RENEWAL_SLACK_S

    def tick(self) -> None:
        """Note that the loop runs; a gap past a renewal interval (and SHORTEST_STALL_S) since
        it was last seen running is a stall of this host, and holds the next pass."""
        now = self._clock()
        if self._seen_at is not None and now - self._seen_at > self._stall_s:
            self._stalled_s = max(self._stalled_s, now - self._seen_at)
        self._seen_at = now

    def run(self, backend: "ThreadmillTaskBackend", **options: Any) -> ReapReport:
        """Run one ``reap_pass`` with ``options``, settling leases unless a hold is on; raise
        as it raises."""
        self.tick()
        try:
            report = reap_pass(backend, settles=self._settles, **options)
        except BrokerUnavailable as exc:  # Redis did not answer (or refused writes) at the start
            self._ended(_outage(exc) or "Redis did not answer the last reap pass")
            raise
        if report.unreachable is not None:
            self._ended("Redis stopped answering during the last reap pass")
        else:  # Redis answered: an outage if it refused writes, advancing workflows too
            errors = [*report.failures.values(), *filter(None, [report.advance_failed])]
            self._ended(next(filter(None, map(_outage, errors)), ""))
        return report

    def _settles(self, server: ServerSeen) -> bool:
        """Say, as a pass starts, whether it may settle expired leases, reaching ``server``;
        log a hold it starts."""
        now = self._clock()
        reasons = [self._outage] if self._outage else []
        if self._stalled_s:
            reasons.append(f"this reaper stalled {self._stalled_s:.1f}s")
        self._stalled_s = 0.0
        if server.unnoted is None and self._seen_here is not None:
            reasons.append("the Redis Cluster node of the reapers' server note answers again")
        server_seen_s, first_seen = self._server_seen_s(server)
        jumped_s = self._redis_clock_jump_s(server_seen_s, now)
        if jumped_s > self._stall_s:
            reasons.append(f"the Redis clock jumped {jumped_s:.1f}s ahead of this host's")
        left_s = self.hold_s if reasons else 0.0
        if server_seen_s < self.hold_s:
            reasons.append(f"{first_seen} {server_seen_s:.1f}s ago")
            left_s = max(left_s, self.hold_s - server_seen_s)
        if reasons:
            if now >= self._until:
                logger.warning(
                    "Expired leases held hold_s=%g reason=%s (live workers renew theirs "
                    "meanwhile; those still expired then are settled: docs/lifecycle.md, After "
                    "an outage or a stall)",
                    round(left_s, 1),
                    ", ".join(reasons),
                )
                self.held = ", ".join(reasons)
            self._until = max(self._until, now + left_s)
            return False
        if now < self._until:
            return False
        if self._until != -math.inf:
            logger.info("Expired leases settled again, the hold over")
            self._until = -math.inf
        self.held = ""
        return True

    def _server_seen_s(self, server: ServerSeen) -> tuple[float, str]:
        """Return how long ago (s) ``server`` was first seen, by the reapers' note or, when it
        could not be read, by this loop; and how a hold's reason says so, up to the time."""
        self.unnoted = server.unnoted
        if server.ms_ago is not None:
            self._seen_here = None
            return server.ms_ago / 1000, "a new Redis server (restarted or failed over), first seen"
        if self._seen_here is None or self._seen_here[0] != server.identity:
            self._seen_here = (server.identity, server.now_ms)
        return (server.now_ms - self._seen_here[1]) / 1000, (
            "the reapers' server note unread (its Redis Cluster node did not answer), the "
            "primaries that answer first seen by this reaper"
        )

    def _redis_clock_jump_s(self, server_seen_s: float, now: float) -> float:
        """Return how much further the Redis clock ran than this host's lease clock since the
        last pass (0 at the first, or after a new server), and note this pass's reading.

        Leases lapse on the Redis clock: one that jumped ahead (its host's clock stepped by
        NTP or by hand) lapsed live workers' leases by as much, with no outage to see.
        """
        last, self._server_seen = self._server_seen, (server_seen_s, now)
        if last is None or server_seen_s < last[0]:  # a new server: held as such
            return 0.0
        return (server_seen_s - last[0]) - (now - last[1])

    def _ended(self, outage: str) -> None:
        """Note that a pass ended, and why it counts as an outage ("" if it does not): its
        length is no stall, whatever a backlog made it."""
        self._seen_at = self._clock()
        self._outage = outage


def _outage(error: BrokerUnavailable) -> str:
    """Say why an error of a pass counts as an outage: Redis refused writes, or a cluster
    served no call on a queue's slot, workers' renewals too; "" for any other (a key of
    another type in one queue)."""
    if refuses_writes(error):
        return "Redis refused writes in the last reap pass, workers' renewals too"
    if slot_not_served(error):  # a resharding moving the queue's slot, or a failover
        return (
            "the Redis Cluster served no call on a queue's hash slot in the last reap pass "
            "(the slot moving to another node, or failing over), workers' renewals neither"
        )
    return ""
