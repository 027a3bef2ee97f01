"""What tests that build a worker's parts without the command share: WorkerOptions, a broker
that records its acquires and idle waits."""

from collections.abc import Mapping, Sequence
from typing import Any

from django_threadmill.broker import Acquired, Broker
from django_threadmill.worker.options import WorkerOptions


def worker_options(**changes: Any) -> WorkerOptions:
    """One process of one thread on "default", nothing optional on, with ``changes``."""
    options: dict[str, Any] = {
        "backend_alias": "default",
        "queues": ("default",),
        "processes": 1,
        "threads": 1,
        "prefetch": None,
        "max_tasks": None,
        "max_tasks_jitter": 0,
        "burst": False,
        "sync_ack": False,
        "grace_period_s": 1.0,
        "task_timeout_s": None,
        "reap_interval_s": None,
    }
    return WorkerOptions(**{**options, **changes})


class WatchedBroker(Broker):
    """The real broker on the test's Redis; its idle waits are recorded instead of blocking."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.acquires = 0
        self.waits_s: list[float] = []

    def acquire_from(self, counts: Mapping[str, int]) -> list[Acquired]:
        self.acquires += 1
        return super().acquire_from(counts)

    def wait_for_work(self, queues: Sequence[str], worker_id: str, timeout_s: float) -> bool:
        self.waits_s.append(timeout_s)
        return False  # as a BLPOP that timed out
