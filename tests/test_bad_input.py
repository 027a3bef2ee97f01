"""Bad-input catalogue (docs/reliability.md): each case errors at the right place, loses nothing.

Cases already covered elsewhere are listed in docs/reliability.md with their test; this file
holds the rest: odd arguments, edge values, and garbage written by hand into each of our keys.
"""

import json
from datetime import UTC, datetime, timedelta

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Ack, Broker, Finish, Outcome
from django_threadmill.codec.payloads import decode_payload
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import InvalidTask, TaskResultStatus, task
from django_threadmill.exceptions import BrokerUnavailable, PayloadError
from django_threadmill.worker.reaper import reap_once
from testproject.example.tasks import echo

from .backend_support import start

GARBAGE = "not-a-task-id"
DAMAGED = (
    r"Redis at \S+ holds a value of the wrong kind in one of this backend's keys \(.*\)\. "
    r"Something other than django-threadmill wrote to it: delete that key, or give each "
    r"project its own OPTIONS\['key_prefix'\]\."
)


def ready_ids(broker: Broker, queue: str = "default") -> list[str]:
    return broker.client.zrange(broker.queue_keys(queue).ready, 0, -1)


# Arguments ---------------------------------------------------------------------------------

UNICODE = ["émoji 🐍🚀", "rtl \u202eevil", "nul \x00 byte", "lone \ud800 surrogate", "\U0001d518"]


def test_unicode_arguments_round_trip(backend: ThreadmillTaskBackend) -> None:
    result = echo.enqueue(UNICODE)
    stored = backend.get_result(result.id)
    assert stored.args == [UNICODE]


def test_unicode_keyword_names_round_trip(backend: ThreadmillTaskBackend) -> None:
    result = backend.enqueue(echo, (), {"value": {"ключ 🔑": "значение"}})
    assert backend.get_result(result.id).kwargs == {"value": {"ключ 🔑": "значение"}}


def test_utf8_bytes_arrive_as_text(backend: ThreadmillTaskBackend) -> None:
    """Django turns UTF-8 bytes into str; other bytes are refused (test_errors_enqueue.py)."""
    result = echo.enqueue(b"caf\xc3\xa9 \x00")
    assert backend.get_result(result.id).args == ["café \x00"]


def test_deeply_nested_arguments_are_kept(backend: ThreadmillTaskBackend) -> None:
    nested: list[object] = []
    for _ in range(200):
        nested = [nested]
    result = echo.enqueue(nested)
    assert backend.get_result(result.id).args == [nested]


def test_too_deeply_nested_arguments_are_refused_clearly(broker: Broker) -> None:
    nested: list[object] = []
    for _ in range(100_000):
        nested = [nested]
    with pytest.raises(TypeError, match=r"nested too deeply"):
        echo.enqueue(nested)
    assert ready_ids(broker) == []


def test_a_task_that_does_not_import_is_refused_at_definition() -> None:
    def local() -> None:
        """Not importable by a worker: defined inside a function."""

    with pytest.raises(InvalidTask, match=r"^Task function must be defined at a module level\.$"):
        task(local)


# Edge values -------------------------------------------------------------------------------


def test_priority_edges_are_kept_in_order(backend: ThreadmillTaskBackend, broker: Broker) -> None:
    low = echo.using(priority=-100).enqueue("low")
    high = echo.using(priority=100).enqueue("high")
    middle = echo.enqueue("middle")
    order = [r.lease.task_id for r in broker.acquire("default", 10).reservations]
    assert order == [high.id, middle.id, low.id]


# Garbage written by hand into our keys ----------------------------------------------------


def test_garbage_in_ready_is_dropped_and_real_tasks_run(broker: Broker) -> None:
    real = echo.enqueue(1)
    broker.client.zadd(broker.queue_keys("default").ready, {GARBAGE: 0, "ghost@default": 1})
    reserved = [r.lease.task_id for r in broker.acquire("default", 10).reservations]
    assert reserved == [real.id]
    assert ready_ids(broker) == []


def test_garbage_in_delayed_is_dropped_when_due(broker: Broker) -> None:
    real = echo.enqueue(1)
    broker.client.zadd(broker.queue_keys("default").delayed, {GARBAGE: 0})
    reserved = [r.lease.task_id for r in broker.acquire("default", 10).reservations]
    assert reserved == [real.id]
    assert broker.client.zcard(broker.queue_keys("default").delayed) == 0


def test_garbage_in_leases_is_dropped_by_the_reaper(backend: ThreadmillTaskBackend) -> None:
    broker = backend.broker
    running = echo.enqueue(1)
    start(backend, running.id)
    broker.client.zadd(broker.queue_keys("default").leases, {GARBAGE: 0})
    report = reap_once(backend)
    assert (report.released, report.failed, report.retried) == (0, 0, 0)
    assert broker.client.zrange(broker.queue_keys("default").leases, 0, -1) == [running.id]


def test_garbage_token_in_a_record_loses_nothing(broker: Broker) -> None:
    first, damaged, last = (echo.enqueue(n) for n in range(3))
    broker.client.hset(broker.record_key(damaged.id) or "", "token", "garbage")
    reserved = broker.acquire("default", 10).reservations
    assert [r.lease.task_id for r in reserved] == [first.id, damaged.id, last.id]


def test_garbage_error_count_in_a_record_loses_nothing(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    damaged = echo.enqueue(1)
    broker.client.hset(broker.record_key(damaged.id) or "", "nerrors", "garbage")
    [reservation] = broker.acquire("default", 10).reservations
    failure = Finish(
        lease=reservation.lease,
        outcome=Outcome.FAILED,
        value=json.dumps({"exception_class_path": "ValueError", "traceback": "boom"}),
        started_ms=now_ms(),
        finished_ms=now_ms(),
    )
    assert broker.finish("worker-1", [failure]) == []
    assert backend.get_result(damaged.id).status == TaskResultStatus.FAILED


def test_garbage_in_the_running_error_count_does_not_stop_the_reaper(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    damaged, healthy = echo.enqueue(1), echo.enqueue(2)
    for result in (damaged, healthy):
        start(backend, result.id)
    broker.client.hset(broker.record_key(damaged.id) or "", "nerrors", "garbage")
    leases = broker.queue_keys("default").leases
    broker.client.zadd(leases, {damaged.id: 0, healthy.id: 0})  # both expired
    report = reap_once(backend)
    assert report.failed == 2
    assert backend.get_result(healthy.id).status == TaskResultStatus.FAILED


def test_wake_list_of_the_wrong_type_gives_a_clear_error(broker: Broker) -> None:
    echo.enqueue(0)  # registers the queue
    broker.client.set(broker.queue_keys("default").wake, "garbage")
    with pytest.raises(BrokerUnavailable, match=DAMAGED):
        broker.wait_for_work(["default"], "worker-1", 0.01)


def test_sequence_that_is_not_a_number_gives_a_clear_error(broker: Broker) -> None:
    echo.enqueue(0)
    broker.client.set(broker.queue_keys("default").seq, "garbage")
    with pytest.raises(BrokerUnavailable, match=DAMAGED):
        echo.enqueue(1)
    assert len(ready_ids(broker)) == 1


def test_fence_counter_that_is_not_a_number_gives_a_clear_error(broker: Broker) -> None:
    waiting = echo.enqueue(0)
    broker.client.set(broker.queue_keys("default").fence, "garbage")
    with pytest.raises(BrokerUnavailable, match=DAMAGED):
        broker.acquire("default", 10)
    assert ready_ids(broker) == [waiting.id]
    assert echo.get_result(waiting.id).status == TaskResultStatus.READY


def test_stats_that_are_not_numbers_lose_no_outcome(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    result = echo.enqueue(1)
    lease = start(backend, result.id)
    broker.client.hset(broker.queue_keys("default").stats, "successful", "garbage")
    done = Finish(
        lease=lease,
        outcome=Outcome.SUCCESSFUL,
        value="1",
        started_ms=now_ms(),
        finished_ms=now_ms(),
    )
    assert broker.finish("worker-1", [done]) == []
    broker.send_metrics()  # the damaged counter is skipped, the others counted
    assert backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert broker.client.hget(broker.queue_keys("default").stats, "successful") == "garbage"
    # A retried call is a no-op that knows its first try landed.
    assert broker.finish("worker-1", [done]) == [(done, Ack.ALREADY)]


def test_garbage_queue_name_in_the_queue_set_is_harmless(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    broker.client.sadd(broker.keyspace.queues, "no such queue! {}")
    assert reap_once(backend).failed == 0


def test_payload_nested_too_deeply_to_decode_fails_clearly() -> None:
    raw = '{"path": "x", "args": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(PayloadError, match=r"^Stored payload is nested too deeply to decode"):
        decode_payload(raw)


def test_garbage_score_in_a_delayed_record_still_runs_it(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    damaged = echo.using(run_after=datetime.now(UTC) + timedelta(milliseconds=1)).enqueue(1)
    ready = echo.enqueue(2)
    broker.client.hset(broker.record_key(damaged.id) or "", "score", "garbage")
    broker.client.zadd(broker.queue_keys("default").delayed, {damaged.id: 0})  # due now
    reserved = {r.lease.task_id for r in broker.acquire("default", 10).reservations}
    assert reserved == {damaged.id, ready.id}


def test_workers_index_of_the_wrong_type_does_not_stop_renewals(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    running = echo.enqueue(1)
    lease = start(backend, running.id)
    leases = broker.queue_keys("default").leases
    broker.client.zadd(leases, {running.id: 0})  # about to expire
    broker.client.set(broker.queue_keys("default").workers, "garbage")
    with pytest.raises(BrokerUnavailable, match=DAMAGED):
        broker.renew("worker-1", [lease])
    assert broker.client.zscore(leases, running.id) > 0  # the lease itself was pushed


def test_garbage_timestamp_in_a_record_does_not_break_acquire(broker: Broker) -> None:
    """One bad field must not make every fetcher that reserves the task fail in turn."""
    damaged, healthy = echo.enqueue(1), echo.enqueue(2)
    broker.client.hset(broker.record_key(damaged.id) or "", "enqueued_ms", "garbage")
    reserved = broker.acquire("default", 10).reservations
    assert [r.lease.task_id for r in reserved] == [damaged.id, healthy.id]
    assert reserved[0].enqueued_ms is None


def test_the_reaper_settles_a_queue_redis_lost_the_name_of(backend: ThreadmillTaskBackend) -> None:
    """Redis back empty or flushed: the set of queue names is gone while a producer that
    enqueued before still holds leases' tasks; the configured queues are reaped all the same."""
    broker = backend.broker
    lost = echo.enqueue(1)
    lease = start(backend, lost.id)
    broker.client.delete(broker.keyspace.queues)
    broker.client.zadd(broker.queue_keys("default").leases, {lease.task_id: 0})  # expired
    report = reap_once(backend)
    assert report.failed == 1
    lost.refresh()
    assert lost.status == TaskResultStatus.FAILED
