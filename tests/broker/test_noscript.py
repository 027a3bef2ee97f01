"""Scripts survive SCRIPT FLUSH (a Redis restart or failover): EVALSHA reloads on NOSCRIPT."""

from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Lease, NewTask

from .conftest import WORKER, finish, new_task, start


def test_single_calls_reload_after_flush(
    broker: Broker, enqueue: Callable[..., NewTask], redis_client: redis.Redis
) -> None:
    enqueue()
    redis_client.script_flush()
    second = enqueue()
    redis_client.script_flush()
    leases = [r.lease for r in broker.acquire("default", 5).reservations]
    assert len(leases) == 2
    redis_client.script_flush()
    assert broker.finish(WORKER, [finish(lease) for lease in leases]) == []
    record = broker.record(second.id)
    assert record is not None
    assert record["state"] == "successful"


def test_pipelined_calls_reload_after_flush(
    broker: Broker, enqueue: Callable[..., NewTask], redis_client: redis.Redis
) -> None:
    enqueue("default")
    enqueue("emails")
    leases: list[Lease] = [
        *(r.lease for r in broker.acquire("default", 1).reservations),
        *(r.lease for r in broker.acquire("emails", 1).reservations),
    ]
    redis_client.script_flush()
    assert broker.start(WORKER, [start(lease) for lease in leases]) == []
    redis_client.script_flush()
    assert broker.enqueue("reports", [new_task("reports")]).stored == 1


async def test_async_enqueue_reloads_after_flush(broker: Broker, redis_client: redis.Redis) -> None:
    assert (await broker.aenqueue("default", [new_task()])).stored == 1
    redis_client.script_flush()
    assert (await broker.aenqueue("default", [new_task()])).stored == 1
    assert len(broker.acquire("default", 5).reservations) == 2
