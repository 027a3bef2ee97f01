"""An ack writer stopping while its tally holds metrics of a Redis Cluster node the client
spares (down, broker/down_nodes.py) ends at once, saying those metrics are not sent.

A send leaves out the parts on a spared node and keeps their tally for when it answers; the
stop's last send took that for a send that succeeded with more to send, and sent again, no
call reaching Redis and none looking at the node: the writer spun a CPU until the stop's
deadline, and every stop of a worker (a deploy) took the whole grace period while a primary
was down. The node is spared here by the client's own DownNodes, on a single Redis, one of
whose queues stands for a queue on that node.
"""

import logging
from collections.abc import Iterator

import pytest
import redis

from django_threadmill.broker import Broker
from django_threadmill.broker.scripts import ScriptName
from django_threadmill.exceptions import MaybeApplied
from django_threadmill.worker.ack_writer import AckWriter
from tests.broker.conftest import WORKER, finish, new_task
from tests.observability.lost_replies import lose_replies
from tests.worker.support import checked_writer

DOWN_NODE = "10.0.0.9:7000"  # where the spared queue's keys are said to live
UP_NODE = "10.0.0.1:7000"


def spare(broker: Broker, monkeypatch: pytest.MonkeyPatch, queue: str = "default") -> None:
    """Make ``queue`` a queue of a Redis Cluster node the client spares."""
    monkeypatch.setattr(type(broker), "fails_by_node", property(lambda _: True))
    down_key = broker.queue_keys(queue).ready  # the key a send looks its node up by
    monkeypatch.setattr(broker, "node_of", lambda key: DOWN_NODE if key == down_key else UP_NODE)
    broker.down_nodes.failed(DOWN_NODE, redis.ConnectionError("Error connecting to it"))


def tally_one(broker: Broker, queue: str = "default") -> None:
    """Record the outcome of a task of ``queue``: the broker's tally counts it."""
    broker.enqueue(queue, [new_task(queue)])
    [reservation] = broker.acquire(queue, 1).reservations
    assert broker.finish(WORKER, [finish(reservation.lease)]) == []


@pytest.fixture
def writer(broker: Broker) -> Iterator[AckWriter]:
    with checked_writer(broker, WORKER) as writer:
        yield writer


def stop(writer: AckWriter) -> None:
    """Start and stop ``writer``; say if it did not end by the deadline."""
    writer.start()
    writer.stop()
    writer.join(10)
    assert not writer.is_alive(), "the ack writer did not end: its last metrics send spun"


def said_not_sent(caplog: pytest.LogCaptureFixture) -> None:
    [line] = [
        r
        for r in caplog.records
        if r.name == "django_threadmill.worker.ack_writer" and r.levelno == logging.WARNING
    ]
    assert line.getMessage() == (
        "Metrics not sent at the stop: their Redis Cluster node is away (the outcomes are recorded)"
    )


def test_a_stop_with_metrics_of_a_spared_node_ends_at_once(
    broker: Broker,
    writer: AckWriter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tally_one(broker)
    spare(broker, monkeypatch)

    stop(writer)

    assert broker.tally  # kept, not sent: the node never answered
    said_not_sent(caplog)


def test_a_stop_with_a_lost_send_of_a_spared_node_ends_at_once(
    broker: Broker,
    writer: AckWriter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The send to send again (its reply was lost) is the spared node's: kept as it was."""
    tally_one(broker)
    losses = lose_replies(broker, monkeypatch, ScriptName.METRICS)
    losses.left = 1
    with pytest.raises(MaybeApplied):
        broker.send_metrics()
    spare(broker, monkeypatch)

    stop(writer)

    assert broker.tally.unsure()
    said_not_sent(caplog)


def test_a_stop_sends_what_waited_behind_a_lost_send_beside_a_spared_node_s(
    broker: Broker,
    writer: AckWriter,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Both queues' sends lost their reply; "default" counted one more outcome since, which
    waits behind its send; "emails" is on the node spared."""
    tally_one(broker, "default")
    tally_one(broker, "emails")
    outcomes = broker._outcomes

    def reply_lost(*args: object, **options: object) -> object:
        outcomes(*args, **options)  # Redis ran the round trip; its replies are lost
        raise redis.ConnectionError("Connection closed by server.")

    monkeypatch.setattr(broker, "_outcomes", reply_lost)
    with pytest.raises(MaybeApplied):
        broker.send_metrics()
    monkeypatch.setattr(broker, "_outcomes", outcomes)
    tally_one(broker, "default")
    spare(broker, monkeypatch, "emails")

    stop(writer)

    assert redis_client.hgetall(broker.queue_keys("default").stats) == {"successful": "2"}
    assert broker.tally.unsure()  # emails' send, kept as it was
    said_not_sent(caplog)
