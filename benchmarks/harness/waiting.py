"""Poll with a deadline: the one way the benchmarks wait for something, never a fixed sleep."""

import time
from collections.abc import Callable

POLL_INTERVAL_S = 0.0005  # between checks: short, so a wait adds well under a millisecond


class WaitTimeout(AssertionError):
    """What the harness waited for never happened."""


def poll_until(
    condition: Callable[[], bool],
    what: str,
    timeout_s: float = 30.0,
    interval_s: float = POLL_INTERVAL_S,
) -> None:
    """Return once ``condition()`` is true; raise WaitTimeout naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise WaitTimeout(f"Waited {timeout_s:.0f} s, but never saw: {what}.")
        time.sleep(interval_s)  # polling with a deadline, not synchronising
