"""The chaos load: waves of fast, slow, failing, retried and deferred tasks, enqueued under fire."""

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task
from django_threadmill.exceptions import BrokerUnavailable
from tests.support import wait_until

from . import tasks

ENQUEUE_RETRY_S = 30.0  # how long an enqueue is retried while Redis is down or restarting

type Calls = list[tuple[list[Any], dict[str, Any]]]


def _mix(rng: random.Random, log: str, size: int) -> list[tuple[Task, Calls]]:
    """Return one wave: (task, calls) groups in seeded proportions."""
    in_a_moment = datetime.now(UTC) + timedelta(seconds=rng.uniform(0.2, 4.0))
    groups: dict[str, tuple[Task, Calls]] = {
        "fast": (tasks.fast, []),
        "deferred": (tasks.fast.using(run_after=in_a_moment), []),
        "slow": (tasks.slow, []),
        "slow_retried": (tasks.slow_retried, []),
        "failing": (tasks.failing, []),
        "flaky": (tasks.flaky, []),
    }
    weights = {"fast": 62, "deferred": 10, "slow": 3, "slow_retried": 3, "failing": 10, "flaky": 12}
    for kind in rng.choices(list(weights), weights=list(weights.values()), k=size):
        args: list[Any] = [log]
        if kind.startswith("slow"):
            args.append(round(rng.uniform(0.1, 1.0), 3))
        elif kind == "flaky":
            args.append(rng.randint(1, 3))
        groups[kind][1].append((args, {}))
    return [group for group in groups.values() if group[1]]


def _enqueue_retrying(backend: ThreadmillTaskBackend, task: Task, calls: Calls) -> list[str]:
    """Enqueue ``calls``, retrying while Redis is away; return the ids that were stored.

    A call whose reply was lost may have stored tasks under ids we never learn: the audit
    finds those in Redis and counts them as orphans, which must be settled like the rest.
    """
    stored: list[str] = []

    def attempt() -> bool:
        try:
            stored.extend(result.id for result in backend.enqueue_many(task, calls))
        except BrokerUnavailable:
            return False
        return True

    wait_until(attempt, "an enqueue getting through to Redis", ENQUEUE_RETRY_S)
    return stored


def enqueue_waves(
    backend: ThreadmillTaskBackend,
    rng: random.Random,
    log: Path,
    *,
    total: int,
    waves: int,
    pace: Callable[[float], object],
) -> set[str]:
    """Enqueue ``total`` tasks in ``waves``, calling ``pace(seconds)`` between waves."""
    enqueued: set[str] = set()
    size = max(1, total // waves)
    while len(enqueued) < total:
        for task, calls in _mix(rng, str(log), min(size, total - len(enqueued))):
            enqueued.update(_enqueue_retrying(backend, task, calls))
        pace(rng.uniform(0.05, 0.4))
    return enqueued
