"""When a reaping loop holds off settling expired leases: after Redis was away, or after the
loop itself stalled, live workers get the time to renew theirs first (docs/lifecycle.md, After
an outage or a stall)."""

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from .leases import lease_clock

logger = logging.getLogger(__name__)

# Past a renewal interval, what a worker may still need to renew once Redis answers or its host
# resumes: it looks at its lease clock every second, and a renewal takes a round trip or two.
RENEWAL_SLACK_S = 2.0


@dataclass(slots=True)
class ReapHold:
    """Tell a loop that reaps every ``interval_s`` whether its next pass may settle leases.

    A lease lapses by the Redis clock, which ran on while Redis was away (its workers could not
    renew) or while this host was stalled (a paused VM, a frozen container: its workers were
    stalled too). A worker renews as soon as it can: it retries a failed renewal at least once
    a renewal interval (``lease_ttl / 3``) and looks at its lease clock every second. So a pass
    that follows a failed one, or that comes later than due by more than a renewal interval,
    starts a hold of a renewal interval and RENEWAL_SLACK_S, counted from that pass: until it
    ends, passes settle no lease, and a lease still expired then has no live worker. A
    process's first pass holds nothing: it saw no outage.
    """

    interval_s: float
    lease_ttl_s: float
    clock: Callable[[], float] = lease_clock  # runs on through a suspend, as the Redis clock
    _last_end: float | None = None  # when the last pass ended, on ``clock``
    _last_failed: bool = False  # Redis did not answer it
    _until: float = -math.inf  # the hold's end, on ``clock``

    @property
    def renewal_s(self) -> float:
        return self.lease_ttl_s / 3

    def settles(self) -> bool:
        """Say, as a pass starts, whether it may settle expired leases; log a hold it starts."""
        now = self.clock()
        late_s = 0.0 if self._last_end is None else now - self._last_end - self.interval_s
        if self._last_failed or late_s > self.renewal_s:
            held = now < self._until
            self._until = now + self.renewal_s + RENEWAL_SLACK_S
            if not held:
                logger.warning(
                    "Expired leases held for %gs: %s; live workers renew theirs meanwhile, and "
                    "those still expired then are settled (docs/lifecycle.md, After an outage "
                    "or a stall)",
                    round(self._until - now, 1),
                    "Redis did not answer the last reap pass"
                    if self._last_failed
                    else f"this reaper was stalled {late_s:.1f}s past its interval",
                )
        return now >= self._until

    def ended(self, answered: bool) -> None:
        """Note that a pass ended, and whether Redis answered it."""
        self._last_end = self.clock()
        self._last_failed = not answered
