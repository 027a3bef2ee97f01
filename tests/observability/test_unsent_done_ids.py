"""A metrics send that keeps failing keeps the done index's ids up to a bound, not without one.

A send that fails (a queue's ``P:done`` of another type, a Redis that refuses metrics.lua) puts
its tally back for the next send. Counters sum in place, but the done index keeps one id per
finished task: while the sends failed, every task a worker finished stayed in its memory, and
each failed send carried them all again (docs/observability.md, Metrics and the done index).
"""

import logging

import pytest
import redis

from django_threadmill.broker import Broker, metrics
from django_threadmill.exceptions import BrokerUnavailable
from tests.broker.conftest import WORKER, finish, new_task

KEPT = 10  # the bound, lowered so a few tasks pass it


def finish_some(broker: Broker, queue: str, count: int) -> list[str]:
    """Enqueue, reserve and finish ``count`` tasks of ``queue``; return their ids."""
    broker.enqueue(queue, [new_task(queue) for _ in range(count)])
    reservations = broker.acquire(queue, count).reservations
    assert broker.finish(WORKER, [finish(r.lease) for r in reservations]) == []
    return [r.lease.task_id for r in reservations]


def finished_while_sends_fail(
    broker: Broker, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """With the bound lowered to KEPT and the emails queue's done index of another type, finish
    4 tasks before each of 5 metrics sends, which fail; return the finished ids in order."""
    monkeypatch.setattr(metrics, "MAX_UNSENT_DONE_IDS", KEPT)
    redis_client.set(broker.queue_keys("emails").done, "another program's value")
    finished: list[str] = []
    for _ in range(5):
        finished += finish_some(broker, "emails", 4)
        with pytest.raises(BrokerUnavailable, match="holds a value of the wrong kind"):
            broker.send_metrics()
    return finished


def test_failing_sends_keep_the_newest_ids_up_to_the_bound_and_count_every_outcome(
    broker: Broker,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    finished = finished_while_sends_fail(broker, redis_client, monkeypatch)

    kept = [
        task_id
        for part in broker.tally.take().values()
        for _, ids in part.finished
        for task_id in ids
    ]
    assert kept == finished[-KEPT:]  # the newest, in the order they finished
    assert broker.tally.take() == {}
    dropped = [r for r in caplog.records if "left out of the admin's finished list" in r.message]
    assert [r.levelno for r in dropped] == [logging.WARNING] * 3  # the 3rd, 4th and 5th send
    assert [r.getMessage().split("count=")[1].split(" ")[0] for r in dropped] == ["2", "4", "4"]


def test_counters_go_on_summing_past_the_bound(
    broker: Broker, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished = finished_while_sends_fail(broker, redis_client, monkeypatch)
    emails = broker.queue_keys("emails")

    redis_client.delete(emails.done)
    broker.send_metrics()

    assert redis_client.hgetall(emails.stats) == {"successful": "20"}
    assert set(redis_client.zrange(emails.done, 0, -1)) == set(finished[-KEPT:])
