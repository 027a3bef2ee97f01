"""Helpers for the lifecycle tests: playing a worker through the broker, waiting for expiry.

Waiting with a deadline and running manage.py commands come from ``tests/support.py``.
"""

from pathlib import Path

import redis

from django_threadmill.broker import Broker, Finish, Lease, Outcome, Reservation, Start
from django_threadmill.codec.times import now_ms
from tests.support import wait_until

WORKER = "test-worker-1"


def reserve(broker: Broker, queue: str = "default", count: int = 1000) -> list[Reservation]:
    """Reserve up to ``count`` ready tasks of ``queue``, as a prefetcher does."""
    return broker.acquire(queue, count).reservations


def run(broker: Broker, queue: str = "default", worker: str = WORKER) -> list[Lease]:
    """Reserve and start every ready task of ``queue``; return their leases."""
    leases = [reservation.lease for reservation in reserve(broker, queue)]
    assert broker.start(worker, [Start(lease=lease, started_ms=now_ms()) for lease in leases]) == []
    return leases


def ack(broker: Broker, lease: Lease, outcome: Outcome = Outcome.SUCCESSFUL) -> bool:
    """Record an outcome for ``lease`` as its worker would; return False if it was stale."""
    value = (
        "null" if outcome is Outcome.SUCCESSFUL else '{"exception_class_path":"x","traceback":""}'
    )
    finish = Finish(
        lease=lease, outcome=outcome, value=value, started_ms=now_ms(), finished_ms=now_ms()
    )
    recorded = broker.finish(WORKER, [finish]) == []
    broker.send_metrics()  # as the worker's ack writer does on its own clock
    return recorded


def wait_for_expiry(broker: Broker, redis_client: redis.Redis, queue: str = "default") -> None:
    """Wait until every lease of ``queue`` is past its deadline by the Redis clock."""
    leases = broker.queue_keys(queue).leases
    latest = redis_client.zrange(leases, -1, -1, withscores=True)
    assert latest, f"no lease is held in queue {queue!r}"
    deadline_ms = latest[0][1]

    def redis_now_ms() -> float:
        seconds, micros = redis_client.time()
        return seconds * 1000 + micros / 1000

    wait_until(lambda: redis_now_ms() > deadline_ms, f"lease expiry in queue {queue!r}")


def state_of(pid: int) -> str:
    """Return the state letter /proc gives a process (R, S, T, Z, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def expired_ghost_leases(
    broker: Broker, redis_client: redis.Redis, queues: list[str], per_queue: int
) -> None:
    """Register ``queues`` and give each ``per_queue`` leases long past their deadline, whose
    records are gone (ghosts, which a reap round counts and drops as it does any lease)."""
    broker.register_queues(queues)
    with redis_client.pipeline(transaction=False) as pipe:
        for queue in queues:
            leases = broker.queue_keys(queue).leases
            pipe.zadd(leases, {f"{queue}-gone-{n}": 0 for n in range(per_queue)})
        pipe.execute()
