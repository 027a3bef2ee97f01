"""A metrics send whose reply was lost is counted once, whether or not Redis ran it.

The ack writer and the reaper send their tally of outcomes about once a second with
metrics.lua. When a send raised ``MaybeApplied`` (Redis ran it, then the connection dropped
before its reply was read), its tally was merged back into the live one and the next send
counted it again: ``successful: 2`` for one task. Counters and histogram buckets are not
idempotent, so each send is numbered per sender, a send whose reply was lost goes again under
its number, and metrics.lua skips a number it already counted.
"""

import os

import pytest
import redis

from django_threadmill.broker import Broker, metrics
from django_threadmill.broker.metrics import SENT_TTL_MS
from django_threadmill.broker.scripts import ScriptName
from django_threadmill.exceptions import MaybeApplied
from django_threadmill.worker.ack_writer import AckWriter
from tests.broker.conftest import WORKER, finish
from tests.observability.lost_replies import Losses, lose_replies
from tests.observability.test_outcomes_counted_once_and_tracers_that_raise import (
    counted,
    reserved,
    writer,
)
from tests.support import command_calls

__all__ = ["writer"]  # the ack writer of a test, joined at its end
ECHO = "testproject.example.tasks.echo"  # the path new_task stores


@pytest.fixture
def losses(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> Losses:
    """Lose the replies of metrics sends as ``Losses`` says."""
    return lose_replies(broker, monkeypatch, ScriptName.METRICS)


def finished(broker: Broker, count: int) -> list[str]:
    """Reserve and finish ``count`` new tasks of "default"; return their ids."""
    leases = reserved(broker, count)
    assert broker.finish(WORKER, [finish(lease) for lease in leases]) == []
    return [lease.task_id for lease in leases]


def successes(client: redis.Redis, broker: Broker) -> tuple[dict[str, str], str | None]:
    """Return the queue's outcome counters and its echo task's lifetime successes."""
    keys = broker.queue_keys("default")
    return client.hgetall(keys.stats), client.hget(keys.metrics, f"{ECHO}|successful")


@pytest.mark.parametrize("times", [1, 2], ids=["lost-once", "lost-again-when-sent-again"])
def test_a_send_whose_reply_was_lost_is_counted_once(
    times: int, broker: Broker, losses: Losses, redis_client: redis.Redis
) -> None:
    ids = finished(broker, 2)
    losses.left = times
    for _ in range(times):
        with pytest.raises(MaybeApplied):
            broker.send_metrics()
    assert successes(redis_client, broker) == ({"successful": "2"}, "2")  # Redis ran it

    ids += finished(broker, 1)
    broker.send_metrics()  # the lost send again: skipped; the new outcome waits behind it
    broker.send_metrics()

    assert successes(redis_client, broker) == ({"successful": "3"}, "3")
    assert counted(redis_client, broker.queue_keys("default"))[1] == set(ids)
    assert not broker.tally


def test_a_send_that_never_ran_is_counted_once_when_sent_again(
    broker: Broker, losses: Losses, redis_client: redis.Redis
) -> None:
    ids = finished(broker, 2)
    losses.left, losses.ran = 1, False
    with pytest.raises(MaybeApplied):
        broker.send_metrics()
    assert successes(redis_client, broker) == ({}, None)

    broker.send_metrics()
    broker.send_metrics()  # nothing left: nothing sent

    assert successes(redis_client, broker) == ({"successful": "2"}, "2")
    assert counted(redis_client, broker.queue_keys("default"))[1] == set(ids)


@pytest.mark.parametrize("ran", [True, False], ids=["landed", "never-ran"])
def test_the_ack_writers_last_send_is_counted_once_when_its_reply_is_lost(
    ran: bool, broker: Broker, losses: Losses, writer: AckWriter, redis_client: redis.Redis
) -> None:
    leases = reserved(broker, 3)
    for lease in leases:  # queued before the thread starts: one batch
        writer.submit_finish(finish(lease))
    losses.left, losses.ran = 1, ran
    writer.start()
    writer.stop()  # flushes, then sends the metrics until none is left
    writer.join(5)

    assert losses.lost == 1
    assert counted(redis_client, broker.queue_keys("default")) == (
        {"successful": "3"},
        {lease.task_id for lease in leases},
    )
    assert not broker.tally


def test_outcomes_waiting_behind_a_lost_send_keep_a_bounded_index(
    broker: Broker, losses: Losses, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a lost send is not answered (Redis away), what comes after waits in memory: the
    counters sum in place, and the done index ids of a part stay within the bound, the lost
    send's included."""
    monkeypatch.setattr(metrics, "MAX_UNSENT_DONE_IDS", 10)
    lost = finished(broker, 4)
    losses.left, losses.ran = 5, False
    waiting: list[str] = []
    for _ in range(5):
        with pytest.raises(MaybeApplied):
            broker.send_metrics()
        waiting += finished(broker, 4)

    broker.send_metrics()  # the lost send
    broker.send_metrics()  # what waited behind it

    assert successes(redis_client, broker) == ({"successful": "24"}, "24")
    done = counted(redis_client, broker.queue_keys("default"))[1]
    assert done == {*lost, *waiting[-6:]}  # 10 in all: the lost send's, then the newest


def test_two_senders_to_one_queue_are_each_counted(
    broker: Broker, redis_client: redis.Redis
) -> None:
    for _ in range(3):  # this sender's sends number 1 to 3
        finished(broker, 1)
        broker.send_metrics()
    other = Broker(broker.settings)  # another process's, or another thread's backend
    leases = reserved(broker, 1)
    assert other.finish(WORKER, [finish(leases[0])]) == []
    other.send_metrics()  # its number 1: counted all the same

    assert successes(redis_client, broker) == ({"successful": "4"}, "4")


def test_a_forked_child_sends_as_a_sender_of_its_own(
    broker: Broker, redis_client: redis.Redis
) -> None:
    finished(broker, 1)
    broker.send_metrics()
    [child_lease] = reserved(broker, 1)
    pid = os.fork()
    if pid == 0:  # the child: a worker process the supervisor forked
        code = 1
        try:
            assert broker.finish(WORKER, [finish(child_lease)]) == []
            broker.send_metrics()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    finished(broker, 1)
    broker.send_metrics()  # the parent's next number: counted after the child's

    assert successes(redis_client, broker) == ({"successful": "3"}, "3")


def test_a_send_costs_one_get_and_one_set_more_and_a_trim_none(
    broker: Broker, redis_client: redis.Redis
) -> None:
    finished(broker, 1)
    broker.send_metrics()  # loads the script: the next send is the steady one
    finished(broker, 3)
    redis_client.config_resetstat()
    broker.send_metrics()
    calls = command_calls(redis_client)
    assert (calls["evalsha"], calls["get"], calls["set"]) == (1, 1, 1)  # per send, not per task
    sent = broker.queue_keys("default").metrics_sent(broker.tally.sender)
    assert 0 < redis_client.pttl(sent) <= SENT_TTL_MS

    redis_client.config_resetstat()
    broker.send_metrics(trimming=["default"])  # the reaper's trim of an idle queue
    calls = command_calls(redis_client)
    assert calls["evalsha"] == 1
    assert "get" not in calls
    assert "set" not in calls
