"""A reap pass on a sharded queue whose one shard cannot set aside an undecodable attempt.

Reap's reply is decoded part by part, and an expired attempt that is not UTF-8 is set aside by
one more call to its part (set_aside_expired.lua). Before, that call's error (a ``damaged``
key of another type there, or that part's node gone down since) was raised out of the decoding
of the whole queue: the replies of its other parts, whose reap calls had run, were dropped with
it. Their expired running attempts were never settled: a dead worker's tasks there stayed
RUNNING every pass, and the queue was said to have failed whole. That part now fails alone, as
one whose reap call failed (docs/lifecycle.md, Keys of another type).
"""

from dataclasses import dataclass

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reaper import reap_pass

from .support import run
from .tasks import plain


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 1.0, "queue_shards": {"default": 4}}


@dataclass(frozen=True, slots=True)
class Planted:
    broken: str  # the part whose damaged key is a string
    undecodable: Lease  # an expired attempt of that part whose payload is not UTF-8
    others: list[Lease]  # the expired attempts of the other parts, which read well


@pytest.fixture
def planted(broker: Broker, redis_client: redis.Redis, raw_client: redis.Redis) -> Planted:
    """Run tasks of "default" until two shards hold one, as a worker that died would, and
    lapse their leases; the first one's payload becomes bytes that are not UTF-8, and its
    shard's ``damaged`` key, where set_aside_expired.lua writes, a string."""
    parts: set[str] = set()
    while len(parts) < 2:
        parts.add(broker.part_in("default", plain.enqueue().id))
    undecodable, *leases = run(broker)
    broken = broker.part_in("default", undecodable.task_id)
    lapsed_ms = broker.server_time_ms() - 1000
    for lease in (undecodable, *leases):
        keys = broker.queue_keys(broker.part_in("default", lease.task_id))
        redis_client.zadd(keys.leases, {lease.task_id: lapsed_ms}, xx=True)
    keys = broker.queue_keys(broken)
    raw_client.hset(keys.record(undecodable.task_id), "payload", b'{"path":"\xff\xfe"}')
    redis_client.set(keys.damaged, "not a hash")
    others = [lease for lease in leases if broker.part_in("default", lease.task_id) != broken]
    return Planted(broken=broken, undecodable=undecodable, others=others)


def test_the_other_shards_replies_are_returned_and_the_broken_one_is_a_failed_part(
    planted: Planted, broker: Broker
) -> None:
    reaped = broker.reap("default", 100)

    assert sorted(attempt.lease.task_id for attempt in reaped.expired) == sorted(
        lease.task_id for lease in planted.others
    )
    assert list(reaped.failed_parts) == [planted.broken]
    assert "wrong kind" in str(reaped.failed_parts[planted.broken])


def test_a_pass_settles_the_other_shards_and_the_broken_ones_attempt_once_its_key_is_deleted(
    planted: Planted, backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    report = reap_pass(backend)

    assert [backend.get_result(lease.task_id).status for lease in planted.others] == [
        TaskResultStatus.FAILED
    ] * len(planted.others)
    assert report.queues["default"].failed == len(planted.others)
    assert list(report.failures) == report.partly == ["default"]  # incomplete, not failed whole
    keys = broker.queue_keys(planted.broken)
    assert redis_client.zscore(keys.leases, planted.undecodable.task_id) is not None  # left

    redis_client.delete(keys.damaged)
    again = reap_pass(backend)

    assert (again.queues["default"].set_aside, again.failures) == (1, {})
    assert redis_client.hexists(keys.damaged, planted.undecodable.task_id)
