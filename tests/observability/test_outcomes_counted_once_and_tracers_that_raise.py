"""Metrics count each outcome once when its finish call's reply was lost; a tracer that raises
fails no task and no enqueue.

A finish call whose reply is lost (a connection dropped after Redis ran it, a write whose
durability was not confirmed) raises ``MaybeApplied``; the ack writer sends the batch again,
and the retry answers "already recorded" for what the first try recorded. Those outcomes
were counted by neither call: they were missing from the metrics and from the done index (the
admin's finished list, ``purge_finished``) for good.

A span processor of the project's SDK that raised made ``enqueue`` raise (after storing the
task, when it raised at the span's end) and made the worker's run raise past the task: its
outcome was never written and its thread died. Run as ``python -m <this module> start|end``,
this file is that probe (the tracer provider is set once per process).
"""

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from django_threadmill.broker import Ack, Broker, Lease
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.broker.scripts import ScriptName
from django_threadmill.exceptions import MaybeApplied
from django_threadmill.worker.ack_writer import AckWriter
from tests.broker.conftest import WORKER, finish, new_task
from tests.observability.lost_replies import Losses, lose_replies
from tests.support import run_python
from tests.worker.support import checked_writer


@pytest.fixture
def lose_a_reply(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> Losses:
    """Lose the reply of the broker's next finish call: Redis runs it, then the connection
    drops before the reply is read."""
    losses = lose_replies(broker, monkeypatch, ScriptName.FINISH)
    losses.left = 1
    return losses


def reserved(broker: Broker, count: int) -> list[Lease]:
    """Enqueue ``count`` echo tasks to "default" and reserve them; return their leases."""
    broker.enqueue("default", [new_task() for _ in range(count)])
    return [r.lease for r in broker.acquire("default", count).reservations]


def counted(client: redis.Redis, keys: QueueKeys) -> tuple[dict[str, str], set[str]]:
    """Return the queue's lifetime outcome counters and the ids in its done index."""
    return client.hgetall(keys.stats), set(client.zrange(keys.done, 0, -1))


@pytest.fixture
def writer(broker: Broker) -> Iterator[AckWriter]:
    with checked_writer(broker, WORKER) as writer:
        yield writer


def test_a_batch_the_ack_writer_retried_after_a_lost_reply_is_counted_once(
    broker: Broker, lose_a_reply: Losses, writer: AckWriter, redis_client: redis.Redis
) -> None:
    leases = reserved(broker, 3)
    for lease in leases:  # queued before the thread starts: one batch
        writer.submit_finish(finish(lease))
    writer.start()
    writer.stop()  # flushes, then sends the metrics
    writer.join(5)

    assert lose_a_reply.lost == 1  # the batch landed; its retry answered "already"
    assert counted(redis_client, broker.queue_keys("default")) == (
        {"successful": "3"},
        {x.task_id for x in leases},
    )


def test_an_outcome_is_counted_once_however_often_its_call_is_retried(
    broker: Broker, lose_a_reply: Losses, redis_client: redis.Redis
) -> None:
    landed, fresh = reserved(broker, 2)
    with pytest.raises(MaybeApplied):
        broker.finish(WORKER, [finish(landed)])
    retried = broker.finish(WORKER, [finish(landed), finish(fresh)])
    assert [(r.item.lease, r.ack) for r in retried] == [(landed, Ack.ALREADY)]
    # A duplicate of an outcome whose call answered is no news: counted once already.
    assert [r.ack for r in broker.finish(WORKER, [finish(landed)])] == [Ack.ALREADY]
    broker.send_metrics()

    assert counted(redis_client, broker.queue_keys("default")) == (
        {"successful": "2"},
        {landed.task_id, fresh.task_id},
    )
    metrics = redis_client.hgetall(broker.queue_keys("default").metrics)
    assert metrics["testproject.example.tasks.echo|successful"] == "2"


@pytest.mark.parametrize("where", ["start", "end"])
def test_a_span_processor_that_raises_fails_no_enqueue_and_no_task(
    where: str, redis_url: str, key_prefix: str
) -> None:
    done = run_python("-m", __name__, where, redis_url=redis_url, key_prefix=key_prefix)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["SUCCESSFUL", 3], ["SUCCESSFUL", 5]]
    doing = "opening" if where == "start" else "ending"
    for span in (f"enqueue {ADD}", f"run {ADD}", f"enqueue {ASYNC_ADD}", f"run {ASYNC_ADD}"):
        assert f"OpenTelemetry raised while {doing} the span '{span}'" in done.stderr
    assert f"processor on_{where} broke" in done.stderr  # the traceback names the cause


ADD, ASYNC_ADD = "testproject.example.tasks.add", "testproject.example.tasks.async_add"


def probe(where: str) -> None:
    """Enqueue a sync and an async task and drain them, with a span processor that raises at
    each span's ``where`` ("start" or "end"); print each result's status and return value."""
    import django
    from opentelemetry import trace
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    class Raising(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            if where == "start":
                raise RuntimeError("processor on_start broke")

        def on_end(self, span: Any) -> None:
            if where == "end":
                raise RuntimeError("processor on_end broke")

    provider = TracerProvider()
    provider.add_span_processor(Raising())
    trace.set_tracer_provider(provider)
    django.setup()

    from django_threadmill.testing import drain
    from testproject.example.tasks import add, async_add

    results = [add.enqueue(1, 2), async_add.enqueue(2, 3)]
    drain()
    for result in results:
        result.refresh()
    print(json.dumps([[r.status.name, r.return_value] for r in results]))


if __name__ == "__main__":
    probe(sys.argv[1])
