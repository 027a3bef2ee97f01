"""A task runs at most MAX_ATTEMPTS attempts, and its record's error count is read as such:
a count past it is damage, set aside by the scripts that would read every error back (a count of
a million held Redis for seconds, past SCRIPT KILL), and read as none by Python."""

import redis

from django_threadmill.broker import Broker, Outcome
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.broker.scripts import lua_constant
from django_threadmill.codec.results import errors_of
from django_threadmill.retry import MAX_ATTEMPTS
from tests.broker.conftest import WORKER, finish, new_task, start

A_MILLION = "1000000"


def test_the_scripts_and_python_share_one_limit() -> None:
    assert lua_constant("MAX_ATTEMPTS") == MAX_ATTEMPTS


def test_acquire_sets_aside_a_record_counting_more_errors_than_attempts(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    tasks = [new_task() for _ in range(3)]
    broker.enqueue("default", tasks)
    redis_client.hset(keys.record(tasks[1].id), "nerrors", A_MILLION)

    reserved = broker.acquire("default", 3).reservations

    assert [r.lease.task_id for r in reserved] == [tasks[0].id, tasks[2].id]
    assert redis_client.hget(keys.damaged, tasks[1].id).endswith(
        f"acquire: nerrors {A_MILLION} is past {MAX_ATTEMPTS}, the most attempts"
    )


def test_reap_sets_aside_a_running_record_counting_more_errors_than_attempts(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [new_task() for _ in range(2)])
    good, bad = (r.lease for r in broker.acquire("default", 2).reservations)
    assert broker.start(WORKER, [start(good), start(bad)]) == []
    redis_client.hset(keys.record(bad.task_id), "nerrors", A_MILLION)
    redis_client.zadd(keys.leases, {good.task_id: 1, bad.task_id: 1}, xx=True)  # expired

    reaped = broker.reap("default", 10)

    assert [attempt.lease.task_id for attempt in reaped.expired] == [good.task_id]
    assert "reap: nerrors" in redis_client.hget(keys.damaged, bad.task_id)
    assert redis_client.zrange(keys.leases, 0, -1) == [good.task_id]


def test_a_task_that_ran_every_attempt_is_not_requeued(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [new_task()])
    (lease,) = (r.lease for r in broker.acquire("default", 1).reservations)
    assert broker.finish(WORKER, [finish(lease, Outcome.FAILED, '"boom"')]) == []
    redis_client.hset(keys.record(lease.task_id), "nerrors", MAX_ATTEMPTS)

    assert broker.requeue(lease.task_id) == "exhausted"
    assert redis_client.hget(keys.record(lease.task_id), "state") == "failed"


def test_python_reads_a_count_past_the_attempts_as_no_errors() -> None:
    assert errors_of({"nerrors": A_MILLION, "error:1": ""}) == []
    assert len(errors_of({"nerrors": "2"})) == 2
