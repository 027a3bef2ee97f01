"""Racing callers on one queue: each task is reserved once and settled once.

docs/design.md, Fenced transitions.
"""

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import redis

from django_threadmill.broker import Broker, Lease, Outcome
from django_threadmill.broker.keys import QueueKeys

from .conftest import finish, new_task, start

TASKS = 400
ERROR = '{"exception_class_path":"ValueError","traceback":"lost the race"}'


def drain(broker: Broker, batch: int) -> list[Lease]:
    """Acquire until the queue is empty, as one prefetcher would."""
    leases: list[Lease] = []
    while reservations := broker.acquire("default", batch).reservations:
        leases.extend(r.lease for r in reservations)
    return leases


def test_racing_acquirers_reserve_each_task_once(broker: Broker) -> None:
    tasks = [new_task() for _ in range(TASKS)]
    broker.enqueue("default", tasks)
    with ThreadPoolExecutor(4, thread_name_prefix="test-acquirer") as pool:
        batches = list(pool.map(drain, [broker] * 4, [3, 5, 7, 11]))
    reserved = Counter(lease.task_id for batch in batches for lease in batch)
    assert reserved == Counter(task.id for task in tasks)


def test_racing_settlers_record_one_outcome(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [new_task() for _ in range(TASKS // 4)])
    leases = drain(broker, 50)
    assert broker.start("worker-a", [start(lease) for lease in leases]) == []

    def settle(outcome: Outcome) -> set[str]:
        """Finish every lease one at a time; return the ids this settler lost.

        The two settlers walk the leases in opposite orders, so they meet in the middle.
        """
        order = leases if outcome == Outcome.SUCCESSFUL else leases[::-1]
        return {
            stale.lease.task_id
            for lease in order
            for stale, _ in broker.finish(f"settler-{outcome}", [finish(lease, outcome, ERROR)])
        }

    with ThreadPoolExecutor(2, thread_name_prefix="test-settler") as pool:
        lost_success, lost_failure = pool.map(settle, [Outcome.SUCCESSFUL, Outcome.FAILED])
    ids = {lease.task_id for lease in leases}
    assert lost_success | lost_failure == ids
    assert not lost_success & lost_failure
    for task_id in ids:
        state, nerrors = redis_client.hmget(keys.record(task_id), "state", "nerrors")
        expected = "failed" if task_id in lost_success else "successful"
        assert (state, nerrors) == (expected, "1" if expected == "failed" else "0")
    broker.send_metrics()  # and the done index, tallied once per recorded outcome
    assert redis_client.zcard(keys.done) == len(ids)
    assert redis_client.zcard(keys.leases) == 0
