"""A sharded queue on one Redis: where tasks live, fair acquire, transitions, reap, wake."""

from dataclasses import replace

import pytest
import redis

from django_threadmill.broker import Broker
from django_threadmill.codec.times import now_ms
from django_threadmill.exceptions import PartlyEnqueued
from tests.broker.conftest import WORKER, finish, new_task, start

from .conftest import SHARDS, shard_counts, tasks_per_shard


def test_each_task_is_stored_under_its_shard_and_found_by_id(
    broker: Broker, redis_client: redis.Redis
) -> None:
    tasks = [new_task("default") for _ in range(40)]
    assert broker.enqueue("default", tasks).stored == 40
    for task in tasks:
        keys = broker.queue_keys(broker.part_in("default", task.id))
        assert redis_client.zscore(keys.ready, task.id) is not None
        assert broker.record(task.id)["state"] == "ready"  # type: ignore[index]
    assert [part.split(".")[0] for part in broker.parts("default")] == [
        f"default#{k}of{SHARDS}" for k in range(SHARDS)
    ]
    assert not redis_client.exists(broker.queue_keys("default").ready)  # no unsharded keys
    assert (
        sum(redis_client.zcard(broker.queue_keys(p).ready) for p in broker.parts("default")) == 40
    )


def test_an_unsharded_queue_keeps_todays_keys(broker: Broker) -> None:
    task = new_task("emails")
    broker.enqueue("emails", [task])
    assert broker.parts("emails") == ["emails"]
    assert broker.record_key(task.id) == f"{broker.keyspace.queue('emails').record(task.id)}"
    assert "{" + broker.settings.alias + ":emails}" in broker.record_key(task.id)  # type: ignore[operator]


def test_acquire_starts_at_the_next_shard_each_call(broker: Broker) -> None:
    """One task per call: every shard comes first in turn, so each gives the same share."""
    placed = tasks_per_shard(3)
    broker.enqueue("default", [task for tasks in placed.values() for task in tasks])
    taken = [
        r.lease.task_id
        for _ in range(3 * SHARDS)
        for r in broker.acquire("default", 1).reservations
    ]
    assert shard_counts(broker, taken) == dict.fromkeys(range(SHARDS), 3)


def test_acquire_splits_its_count_over_the_shards(broker: Broker) -> None:
    """Seven over four shards: two each from the first three in turn, one from the last."""
    placed = tasks_per_shard(2)
    broker.enqueue("default", [task for tasks in placed.values() for task in tasks])
    acquired = broker.acquire("default", 7)
    assert sorted(
        shard_counts(broker, [r.lease.task_id for r in acquired.reservations]).values()
    ) == [1, 2, 2, 2]
    assert len(broker.acquire("default", 7).reservations) == 1
    assert broker.acquire("default", 7).reservations == []


def test_every_shard_is_asked_in_one_round_trip_even_for_nothing(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """A shard asked for 0 still promotes its due delayed tasks and says when the next is due."""
    placed = tasks_per_shard(1)
    later = replace(placed[3][0], run_after_ms=now_ms() + 60_000)
    broker.enqueue("default", [placed[0][0], later])
    broker.acquire("emails", 1)  # loads the script: a NOSCRIPT round would count twice
    before = redis_client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    acquired = broker.acquire("default", 1)
    after = redis_client.info("commandstats")["cmdstat_evalsha"]["calls"]
    assert after - before == SHARDS
    assert [r.lease.task_id for r in acquired.reservations] == [placed[0][0].id]
    assert acquired.next_due_ms is not None
    assert 0 < acquired.next_due_ms <= 60_000


def test_a_skipped_shard_with_tasks_says_look_again_now(broker: Broker) -> None:
    """Asked for one task, three of four shards are only peeked at: one of them has it."""
    [task] = tasks_per_shard(1)[1]
    broker.enqueue("default", [task])
    first = broker.acquire("default", 1)  # shard 0 asked, shards 1-3 peeked
    assert (first.reservations, first.next_due_ms, first.held_back) == ([], 0, False)
    [reservation] = broker.acquire("default", 1).reservations  # shard 1's turn
    assert reservation.lease.task_id == task.id


def test_priority_order_holds_within_a_shard(broker: Broker) -> None:
    placed = tasks_per_shard(2, SHARDS)
    low, high = placed[0]
    broker.enqueue("default", [low, replace(high, priority=10)])
    [reservation] = broker.acquire("default", SHARDS).reservations  # one from each shard
    assert reservation.lease.task_id == high.id


def test_start_finish_renew_release_go_to_each_tasks_shard(broker: Broker) -> None:
    placed = tasks_per_shard(2)
    broker.enqueue("default", [task for tasks in placed.values() for task in tasks])
    leases = [r.lease for r in broker.acquire("default", 2 * SHARDS).reservations]
    assert broker.renew(WORKER, leases, ["default"]) == []
    assert broker.start(WORKER, [start(lease) for lease in leases[:4]]) == []
    assert broker.finish(WORKER, [finish(lease) for lease in leases[:4]]) == []
    assert broker.release(leases[4:]) == 2 * SHARDS - 4
    states = [broker.record(lease.task_id)["state"] for lease in leases]  # type: ignore[index]
    assert states == ["successful"] * 4 + ["ready"] * (2 * SHARDS - 4)


def test_reap_covers_every_shard(broker: Broker, redis_client: redis.Redis) -> None:
    placed = tasks_per_shard(1)
    broker.enqueue("default", [task for tasks in placed.values() for task in tasks])
    leases = [r.lease for r in broker.acquire("default", SHARDS).reservations]
    broker.start(WORKER, [start(leases[0])])
    for lease in leases:
        keys = broker.queue_keys(broker.part_in("default", lease.task_id))
        redis_client.zadd(keys.leases, {lease.task_id: 1}, xx=True)
    reaped = broker.reap("default", 100)
    assert reaped.looked_at == SHARDS  # summed over the shards
    assert sorted(reaped.released) == sorted(lease.task_id for lease in leases[1:])
    assert [attempt.lease.task_id for attempt in reaped.expired] == [leases[0].task_id]
    assert reaped.expired[0].lease.queue == "default"


def test_purge_and_cancel_reach_every_shard(broker: Broker) -> None:
    placed = tasks_per_shard(1)
    tasks = [task for tasks in placed.values() for task in tasks]
    broker.enqueue("default", tasks)
    assert broker.cancel(tasks[0].id, '{"exception_class_path": "x"}', 1) == "cancelled"
    leases = [r.lease for r in broker.acquire("default", SHARDS).reservations]
    broker.finish(WORKER, [finish(lease) for lease in leases])
    broker.send_metrics()  # and the done index that purge walks
    assert broker.requeue(tasks[0].id) == "requeued"
    assert broker.purge("default") == SHARDS - 1


def test_an_idle_wait_on_a_sharded_queue_is_one_blpop_woken_by_any_shard(
    broker: Broker,
) -> None:
    [group] = broker._wake_groups(["default"], WORKER)
    assert len(group) == SHARDS + 1  # every shard's wake list and the process list
    placed = tasks_per_shard(1)
    for shard in (3, 1):
        broker.enqueue("default", placed[shard])
        assert broker.wait_for_work(["default"], WORKER, timeout_s=5) is True
        assert len(broker.acquire("default", 5).reservations) == 1


def test_a_call_that_fails_in_one_shard_says_which_tasks_were_written(
    broker: Broker, redis_client: redis.Redis
) -> None:
    placed = tasks_per_shard(2)
    redis_client.set(broker.queue_keys(broker.parts("default")[2]).ready, "not a zset")
    tasks = [task for tasks in placed.values() for task in tasks]
    with pytest.raises(
        PartlyEnqueued, match="6 of the 8 tasks for sharded queue 'default' were written"
    ) as raised:
        broker.enqueue("default", tasks)
    assert raised.value.written == {t.id for k, ts in placed.items() if k != 2 for t in ts}
    assert "wrong kind" in str(raised.value)
    assert broker.record(placed[0][0].id)["state"] == "ready"  # type: ignore[index]
