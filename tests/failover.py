"""Enqueue through a failover and check that every acknowledged task ends once (issue 14).

A task counts as acknowledged when its enqueue returned: with durability="replicated" a
replica had it by then, so no failover may lose it. Enqueues that raised are not counted.
"""

import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable

from .faults import tasks

SLOW = bool(os.environ.get("THREADMILL_SLOW"))
TOTAL = 3000 if SLOW else 150  # acknowledged tasks per run; CI runs the short one
RETRY_AFTER_S = 0.05  # pause after a refused enqueue: a failover takes seconds
FINAL = {TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED}


class Enqueuer(threading.Thread):
    """Enqueue ``total`` tasks round robin over ``queues``, counting only acknowledged ones."""

    def __init__(self, queues: Sequence[str], total: int, log: Path) -> None:
        super().__init__(name="test-enqueuer")
        self.queues = queues
        self.total = total
        self.log = log
        self.acknowledged: list[TaskResult] = []
        self.refused = 0
        self.error: BaseException | None = None  # what ended the thread early, for the test
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            self._enqueue_all()
        except BaseException as exc:  # the test asserts there was none, naming it
            self.error = exc

    def _enqueue_all(self) -> None:
        turn = 0
        while len(self.acknowledged) < self.total and not self.stopping.is_set():
            queue = self.queues[turn % len(self.queues)]
            turn += 1
            try:
                result = tasks.count_run.using(queue_name=queue).enqueue(str(self.log))
            except BrokerUnavailable:
                self.refused += 1
                self.stopping.wait(RETRY_AFTER_S)
                continue
            self.acknowledged.append(result)

    def stop(self) -> None:
        self.stopping.set()
        self.join()


def statuses(results: Sequence[TaskResult]) -> Counter[TaskResultStatus]:
    """Refresh every result (a refused read counts as not settled yet) and count statuses."""
    counts: Counter[TaskResultStatus] = Counter()
    for result in results:
        try:
            result.refresh()
        except BrokerUnavailable:
            return Counter()
        counts[result.status] += 1
    return counts


def all_settled(results: Sequence[TaskResult]) -> bool:
    counts = statuses(results)
    return sum(counts[status] for status in FINAL) == len(results)
