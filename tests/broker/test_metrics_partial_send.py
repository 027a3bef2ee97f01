"""A metrics send that fails for one queue part counts the others once, not again and again.

Counters are not fenced: when one part's metrics.lua call failed (here a ``P:done`` of another
type), every part's tally was put back, so the parts already counted were counted again at each
later send: 1 + 2 + 3 outcomes for 3.
"""

import pytest
import redis

from django_threadmill.broker import Broker
from django_threadmill.exceptions import BrokerUnavailable

from .conftest import WORKER, finish, new_task

ECHO = "testproject.example.tasks.echo"  # the path conftest.new_task stores


def finish_one(broker: Broker, queue: str) -> None:
    assert broker.enqueue(queue, [new_task(queue)]).stored == 1
    [reservation] = broker.acquire(queue, 1).reservations
    assert broker.finish(WORKER, [finish(reservation.lease)]) == []


def test_a_send_failing_for_one_part_counts_the_others_once(
    broker: Broker, redis_client: redis.Redis
) -> None:
    default, emails = broker.queue_keys("default"), broker.queue_keys("emails")
    redis_client.set(emails.done, "another program's value")
    for _ in range(3):
        finish_one(broker, "default")
        finish_one(broker, "emails")
        with pytest.raises(BrokerUnavailable, match="holds a value of the wrong kind"):
            broker.send_metrics()
    assert redis_client.hgetall(default.stats) == {"successful": "3"}
    assert redis_client.hget(default.metrics, f"{ECHO}|successful") == "3"
    assert redis_client.zcard(default.done) == 3

    redis_client.delete(emails.done)
    broker.send_metrics()  # the failed part's tally was kept, and is counted now

    assert redis_client.hgetall(emails.stats) == {"successful": "3"}
    assert redis_client.hget(emails.metrics, f"{ECHO}|successful") == "3"
    assert redis_client.zcard(emails.done) == 3
    assert redis_client.hgetall(default.stats) == {"successful": "3"}
