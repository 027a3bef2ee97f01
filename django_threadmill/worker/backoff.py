"""How long the worker waits before trying again: doubling waits, capped, one place for all.

Every loop that retries Redis (fetching, writing acks, starting up) and the supervisor's
restarts of crashed processes wait ``first_s`` after the first failure, twice that after the
second, and so on up to ``max_s``; a success starts them over.
"""

from dataclasses import dataclass

MAX_DOUBLINGS = 32  # far past any cap: keeps 2**n a small number


@dataclass(frozen=True, slots=True)
class Backoff:
    """Doubling waits between tries: ``first_s`` after one failure, never more than ``max_s``."""

    first_s: float
    max_s: float

    def after(self, failures: int) -> float:
        """Return the wait after ``failures`` failures in a row (1 or more)."""
        factor: int = 2 ** min(max(failures - 1, 0), MAX_DOUBLINGS)  # n >= 0: always an int
        return min(self.first_s * factor, self.max_s)


# Fetching and waiting for Redis at start lose nothing by waiting: tasks stay in Redis.
REDIS_BACKOFF = Backoff(first_s=0.1, max_s=10.0)
# Results wait in the process's memory until written (the durability window): try sooner.
ACK_BACKOFF = Backoff(first_s=0.05, max_s=5.0)
# A worker process that died is started again after this (the supervisor).
RESTART_BACKOFF = Backoff(first_s=0.5, max_s=30.0)
