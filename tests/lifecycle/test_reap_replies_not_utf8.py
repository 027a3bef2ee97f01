"""The reaper reads reap.lua's reply as bytes: an expired attempt whose record holds bytes that
are not UTF-8 is set aside as damaged, and the pass settles the others.

Before, the reply was decoded as a whole, and one such field of a running record (the
payload, ``workers``, an earlier error, the id in ``leases``), written by hand, failed it with
UnicodeDecodeError: ``threadmill_reap`` and every worker supervisor's reap pass failed, pass
after pass, while the record was there, and the other expired leases were never settled. A
reservation under such an id (a worker that died before set_aside.lua leaves one) failed the
pass that released it (docs/lifecycle.md, Damaged records).
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease
from django_threadmill.broker.raw_replies import UndecodableAttempt
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, output_of, run_to_completion, worker

from .support import reserve, run
from .tasks import plain

DAMAGE = [  # field, bytes written by hand, why it is set aside
    ("payload", b'{"path":"\xff\xfe"}', "payload not UTF-8"),
    ("workers", b"host\xc3:1", "workers not UTF-8"),
    ("error:1", b"\xff", "error:1 not UTF-8"),
]
RAW_ID = b"\xff\xfe@default"  # an id in leases that is not UTF-8, its record beside it
LIMITED = "reports"  # a queue at a concurrency limit of 1


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 1.0, "queue_limits": {LIMITED: {"concurrency": 1}}}


@dataclass(frozen=True, slots=True)
class Planted:
    good: Lease  # an expired running attempt that reads well
    damaged: list[str]  # ids whose record holds bytes that are not UTF-8


@pytest.fixture
def planted(
    broker: Broker, redis_client: redis.Redis, raw_client: redis.Redis
) -> Iterator[Planted]:
    """Run five tasks and expire their leases by hand: three records get a field that is not
    UTF-8, one moves under an id that is not UTF-8, one is left as it is."""
    for _ in range(5):
        plain.enqueue()
    *damaged, moved, good = run(broker)
    keys = broker.queue_keys("default")
    for lease, (field, value, _) in zip(damaged, DAMAGE, strict=True):
        record = keys.record(lease.task_id)
        redis_client.hset(record, mapping={"nerrors": 1, "error:1": "{}"})
        raw_client.hset(record, field, value)
    raw_record = keys.record_prefix.encode() + RAW_ID
    raw_client.rename(keys.record(moved.task_id), raw_record)
    redis_client.zrem(keys.leases, moved.task_id)
    raw_client.zadd(keys.leases, {RAW_ID: 0})
    redis_client.zadd(keys.leases, {lease.task_id: 0 for lease in [*damaged, good]})
    try:
        yield Planted(good=good, damaged=[lease.task_id for lease in damaged])
    finally:  # keys that are not UTF-8 would fail the leak guard's decoded SCAN
        raw_client.delete(raw_record, keys.damaged, keys.leases, keys.ready)


def damaged_lines() -> list[str]:
    return output_of("threadmill_queue", "damaged", "default").splitlines()


def test_the_reap_command_sets_them_aside_and_settles_the_others(
    planted: Planted,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    reaper = Command(redis_url, key_prefix, "threadmill_reap", "--once", lease_ttl_s=1.0)
    log = run_to_completion(reaper)

    assert "UnicodeDecodeError" not in log
    assert "Settled queue=default released=0 failed=1 retried=0 stale=0 set_aside=4" in log
    assert "Damaged records set aside queue=default count=4 script=reap" in log
    assert backend.get_result(planted.good.task_id).status == TaskResultStatus.FAILED
    listed = {
        (found["id"], found["reason"])
        for line in damaged_lines()
        if (
            found := re.fullmatch(
                r"queue=default id=(?P<id>\S+) at=\S+ script=reap "
                r"reason=(?P<reason>.*)",
                line,
            )
        )
    }
    assert listed == {
        *((task_id, reason) for task_id, (*_, reason) in zip(planted.damaged, DAMAGE, strict=True)),
        (r"\xff\xfe@default", "id not UTF-8"),
    }
    assert redis_client.zcard(broker.queue_keys("default").leases) == 0
    for task_id in planted.damaged:  # left as the reaper found it, for an operator to look at
        assert redis_client.hget(broker.queue_keys("default").record(task_id), "state") == (
            "running"
        )
    again = run_to_completion(
        Command(redis_url, key_prefix, "threadmill_reap", "--once", lease_ttl_s=1.0)
    )
    assert "Settled queue=default released=0 failed=0 retried=0 stale=0 set_aside=0" in again


def test_a_worker_supervisor_reaps_past_them(
    planted: Planted, backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    log = run_to_completion(worker(redis_url, key_prefix, "--burst", lease_ttl_s=1.0))

    assert "UnicodeDecodeError" not in log
    assert backend.get_result(planted.good.task_id).status == TaskResultStatus.FAILED
    assert len(damaged_lines()) == 4


def test_a_dry_run_counts_them_and_changes_nothing(
    planted: Planted, broker: Broker, raw_client: redis.Redis
) -> None:
    keys = broker.queue_keys("default")
    before = raw_client.zrange(keys.leases, 0, -1, withscores=True)

    output = output_of("threadmill_reap", "--dry-run")

    assert "Would settle queue=default released=0 failed=1 retried=0 stale=0 set_aside=4" in output
    assert f"queue=default task_id={planted.good.task_id} action=fail " in output
    assert raw_client.zrange(keys.leases, 0, -1, withscores=True) == before
    assert raw_client.hlen(keys.damaged) == 0


def test_a_reservation_under_an_id_not_utf8_is_released_then_set_aside_by_acquire(
    broker: Broker, redis_client: redis.Redis, raw_client: redis.Redis
) -> None:
    """reap.lua puts it back in ready, as any reservation; acquire sets it aside as it does
    every id that is not UTF-8, and the task beside it runs."""
    plain.enqueue()
    [held] = reserve(broker)
    good = plain.enqueue()
    keys = broker.queue_keys("default")
    raw_record = keys.record_prefix.encode() + RAW_ID
    try:
        raw_client.rename(keys.record(held.lease.task_id), raw_record)
        redis_client.zrem(keys.leases, held.lease.task_id)
        raw_client.zadd(keys.leases, {RAW_ID: 0})

        assert output_of("threadmill_reap", "--dry-run").startswith(
            "queue=default task_id=\\xff\\xfe@default action=release\n"
        )
        reaped = broker.reap("default", 10)
        assert (reaped.released, reaped.set_aside) == ([r"\xff\xfe@default"], 0)
        assert [r.lease.task_id for r in reserve(broker)] == [good.id]
        assert raw_client.hget(keys.damaged, RAW_ID).endswith(b" acquire: id not UTF-8")
    finally:
        raw_client.delete(raw_record, keys.damaged)


# What changed between reap's reply and setting the attempt aside: its record, or its lease.
SINCE = {
    "settled by another reaper": {"state": "failed"},
    "reserved again, another token": {"state": "running", "token": "another"},
    "renewed by its worker": {},
}


@pytest.mark.parametrize("since", SINCE)
def test_setting_aside_is_fenced_by_the_attempt(
    since: str, broker: Broker, redis_client: redis.Redis
) -> None:
    """As finish.lua fences the reaper: an attempt settled, held or renewed since is not the
    one reap answered, and stays as it is."""
    plain.enqueue()
    [lease] = run(broker)
    keys = broker.queue_keys("default")
    redis_client.zadd(keys.leases, {lease.task_id: 2**52 if not SINCE[since] else 0})
    if SINCE[since]:
        redis_client.hset(keys.record(lease.task_id), mapping=SINCE[since])
    record = redis_client.hgetall(keys.record(lease.task_id))

    attempt = UndecodableAttempt(lease.task_id.encode(), lease.token.encode(), "payload not UTF-8")
    assert broker._set_aside_expired("default", "default", [attempt]) == 0

    assert redis_client.hget(keys.damaged, lease.task_id) is None
    assert redis_client.zscore(keys.leases, lease.task_id) is not None
    assert redis_client.hgetall(keys.record(lease.task_id)) == record


def test_one_set_aside_frees_its_slot_and_wakes_a_fetcher(
    broker: Broker, redis_client: redis.Redis, raw_client: redis.Redis
) -> None:
    """As any lease dropped without a finish: the task the limit held back must not wait for
    a wake token that never comes (tests/limits/test_freed_slots_wake_a_fetcher.py)."""
    limited = plain.using(queue_name=LIMITED)
    limited.enqueue()
    waiting = limited.enqueue()
    [lease] = run(broker, LIMITED)
    keys = broker.queue_keys(LIMITED)
    raw_client.hset(keys.record(lease.task_id), "payload", b"\xff")
    redis_client.zadd(keys.leases, {lease.task_id: 0})
    redis_client.delete(keys.wake)

    assert broker.reap(LIMITED, 10).set_aside == 1

    assert redis_client.llen(keys.wake) == 1
    assert [r.lease.task_id for r in reserve(broker, LIMITED)] == [waiting.id]
