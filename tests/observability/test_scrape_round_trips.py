"""A scrape's round trips do not grow with its queues; a metrics send asks each key's type once.

- A scrape read each queue's leases (ZCARD, ZREVRANGE, then an HMGET of their states) and its
  oldest READY task (the band heads, then their fields) queue after queue: with 50 queues, a
  few hundred round trips. Every queue's reads of one kind now go in one pipeline (per node on
  a Redis Cluster), the band walks in step, so a scrape of 20 queues makes the round trips of
  a scrape of one.
- metrics.lua asked ``TYPE`` of ``P:metrics:paths`` twice per send (once for a set of earlier
  versions, once for another type); it now asks once, and a key of another type still fails
  the send with nothing counted.
"""

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from django_threadmill.broker import Broker, Outcome
from django_threadmill.broker.inspect import Inspector
from django_threadmill.broker.inspect.source import Source
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.observability.prometheus import exposition
from tests.broker.conftest import WORKER, finish, new_task
from tests.support import command_calls, round_trips

QUEUES = [f"q{n}" for n in range(20)]
HOUR_MS = 3_600_000


def fill(broker: Broker, queue: str) -> None:
    """Give ``queue`` what every family reads: ready tasks, a reservation, a finished task
    with its counters sent, and a worker's heartbeat."""
    broker.enqueue(queue, [new_task(queue) for _ in range(4)])
    first, held = (r.lease for r in broker.acquire(queue, 2).reservations)
    assert broker.finish(WORKER, [finish(first)]) == []
    broker.send_metrics()
    assert broker.renew(WORKER, [held], [queue], threads=2) == []


def scrape(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> tuple[int, set[str]]:
    """Scrape ``broker``'s queues; return its round trips and the queues it exported."""
    exposition([Source(broker, frozenset())])  # connects: no handshake is counted below
    with round_trips(monkeypatch) as writes:
        body = exposition([Source(broker, frozenset())])  # a Source per scrape, as the view
    queues = {
        sample.labels["queue"]
        for family in text_string_to_metric_families(body.decode())
        if family.name == "threadmill_queue_tasks"
        for sample in family.samples
        if sample.labels["state"] == "reserved" and sample.value == 1
    }
    return len(writes), queues


def test_a_scrape_of_twenty_queues_makes_the_round_trips_of_one(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(broker, QUEUES[0])
    one, exported = scrape(broker, monkeypatch)
    assert exported == {QUEUES[0]}
    for queue in QUEUES[1:]:
        fill(broker, queue)
    twenty, exported = scrape(broker, monkeypatch)
    assert exported == set(QUEUES)
    assert twenty == one


def test_queues_walked_in_step_each_get_their_own_oldest_ready(
    broker: Broker, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queue whose walk takes several steps (three bands over the sample) beside one read in
    the first: each walk keeps its own reads, the long one to its last band."""
    monkeypatch.setattr("django_threadmill.broker.inspect.ready_walk.BAND_SAMPLE", 2)
    inspector = Inspector(broker)
    now = inspector.now_ms()
    oldest = {}
    for queue, priorities in (("long", (-10, 0, 10)), ("short", (0,))):
        tasks = [new_task(queue, priority=p) for p in priorities for _ in range(3)]
        broker.enqueue(queue, tasks)
        oldest[queue] = now - HOUR_MS * len(priorities)
        last_band_first = tasks[0]  # priority -10 is walked last
        redis_client.hset(
            broker.queue_keys(queue).record(last_band_first.id), "enqueued_ms", oldest[queue]
        )
    assert inspector.oldest_ready_times(["long", "short"]) == oldest


def test_a_send_asks_each_keys_type_once(broker: Broker, redis_client: redis.Redis) -> None:
    broker.send_metrics(trimming=["default"])  # loads metrics.lua
    redis_client.config_resetstat()
    broker.send_metrics(trimming=["default"])
    assert command_calls(redis_client).get("type") == 2  # P:done and P:metrics:paths


def test_a_paths_key_of_another_type_still_fails_the_send(
    broker: Broker, redis_client: redis.Redis
) -> None:
    keys = broker.queue_keys("default")
    redis_client.rpush(keys.metrics_paths, "another program's value")
    broker.enqueue("default", [new_task()])
    [reservation] = broker.acquire("default", 1).reservations
    assert broker.finish(WORKER, [finish(reservation.lease, Outcome.SUCCESSFUL)]) == []
    with pytest.raises(BrokerUnavailable, match="holds a value of the wrong kind"):
        broker.send_metrics()
    assert (redis_client.hgetall(keys.stats), redis_client.zcard(keys.done)) == ({}, 0)

    redis_client.delete(keys.metrics_paths)
    broker.send_metrics()

    assert (redis_client.hgetall(keys.stats), redis_client.zcard(keys.done)) == (
        {"successful": "1"},
        1,
    )
