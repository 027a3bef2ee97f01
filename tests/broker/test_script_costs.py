"""What the hot scripts cost Redis, command by command, where a task that waits meets them most:
a result that arrives alone, an acquire that finds its queue empty (or paused), a batch.

Counted from INFO commandstats, which counts the commands a script runs too.
"""

from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Lease
from django_threadmill.codec.times import now_ms
from tests.support import command_calls

from .conftest import WORKER, finish, new_task


def test_a_lone_success_costs_five_commands(
    broker: Broker, reserve: Callable[[], Lease], redis_client: redis.Redis
) -> None:
    lease = reserve()
    broker.finish(WORKER, [finish(lease)])  # loads the script: the next call is the steady one
    lone = reserve()
    redis_client.config_resetstat()
    assert broker.finish(WORKER, [finish(lone)]) == []
    assert command_calls(redis_client) == {
        "evalsha": 1,  # no TIME: a success needs no clock
        "hmget": 1,  # the fence: state and token
        "hset": 1,  # the outcome
        "pexpire": 1,  # result_ttl
        "zrem": 1,  # out of the leases
    }  # the done index's ZADD goes with the metrics, once a second for every result


def test_a_batch_reads_the_clock_once_and_expires_its_records_at_one_time(
    broker: Broker, reserve: Callable[[], Lease], redis_client: redis.Redis
) -> None:
    broker.finish(WORKER, [finish(reserve())])  # loads the script
    leases = [reserve() for _ in range(3)]
    redis_client.config_resetstat()
    assert broker.finish(WORKER, [finish(lease) for lease in leases]) == []
    assert command_calls(redis_client) == {
        "evalsha": 1,
        "time": 1,  # once for the call: PEXPIREAT needs no rewrite for replicas and the AOF
        "hmget": 3,
        "hset": 3,
        "pexpireat": 3,
        "zrem": 1,
    }


def test_the_metrics_send_indexes_every_result_in_one_command(
    broker: Broker, reserve: Callable[[], Lease], redis_client: redis.Redis
) -> None:
    broker.finish(WORKER, [finish(reserve()) for _ in range(3)])
    broker.send_metrics()  # loads the script
    broker.finish(WORKER, [finish(reserve()) for _ in range(3)])
    redis_client.config_resetstat()
    broker.send_metrics()
    calls = command_calls(redis_client)
    assert calls["zadd"] == 1  # three ids, one ZADD
    assert calls["evalsha"] == 1


def test_an_empty_queue_costs_its_two_reads(broker: Broker, redis_client: redis.Redis) -> None:
    """A worker asks its empty queues beside a busy one every refill: with nothing delayed and
    no limit, the two reads answer, with no clock and no pause check (an empty queue answers
    what a paused one does)."""
    broker.acquire("default", 4)  # loads the script
    redis_client.config_resetstat()
    acquired = broker.acquire("default", 4)
    assert (acquired.reservations, acquired.next_due_ms, acquired.held_back) == ([], None, False)
    assert command_calls(redis_client) == {
        "evalsha": 1,
        "zrange": 2,  # the delayed index's head, the ready head
    }


def test_an_empty_queue_with_tasks_delayed_reads_the_clock(
    broker: Broker, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [new_task(run_after_ms=now_ms() + 60_000)])
    broker.acquire("default", 4)  # loads the script
    redis_client.config_resetstat()
    acquired = broker.acquire("default", 4)
    assert acquired.reservations == []
    assert acquired.next_due_ms is not None
    assert 0 < acquired.next_due_ms <= 60_000
    assert command_calls(redis_client) == {
        "evalsha": 1,
        "time": 1,  # is the head due, and in how long
        "exists": 1,  # the pause
        "zrange": 2,  # the delayed index's head (not due: no ZRANGEBYSCORE), the ready head
    }


def test_a_paused_queue_reads_three_things_and_writes_nothing(
    broker: Broker, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [new_task() for _ in range(3)])
    broker.pause("default", "test")
    broker.acquire("default", 4)  # loads the script
    redis_client.config_resetstat()
    assert broker.acquire("default", 4).reservations == []
    # The two heads (tasks are ready: not an empty queue), then the pause; no clock.
    assert command_calls(redis_client) == {"evalsha": 1, "zrange": 2, "exists": 1}


def test_a_batch_costs_two_commands_a_task_and_nine_a_call(
    broker: Broker, redis_client: redis.Redis
) -> None:
    broker.acquire("default", 4)
    assert broker.enqueue("default", [new_task() for _ in range(5)]).stored == 5
    redis_client.config_resetstat()
    assert len(broker.acquire("default", 3).reservations) == 3
    assert command_calls(redis_client) == {
        "evalsha": 1,
        "time": 1,
        "exists": 1,  # the pause
        "zrange": 2,  # the ready head reads one id more than it takes: tasks are left
        "get": 1,  # the fence counter, checked before anything moves
        "zremrangebyrank": 1,
        "incrby": 1,  # this call's fence token
        "hmget": 3,  # per task: state, payload, enqueued_ms, nerrors
        "hset": 3,  # per task: reserved, with the token
        "zadd": 1,  # the leases, in one call
        "llen": 1,  # the baton: tasks are left (enqueue's wake token is still there)
    }
