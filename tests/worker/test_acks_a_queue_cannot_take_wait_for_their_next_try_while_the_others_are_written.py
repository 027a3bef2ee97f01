"""Outcomes that one queue's call could not record wait for their next try, and the other
queues' outcomes, in the same batch and after it, are written meanwhile.

The ack writer sent a failed batch again whole, every later start and outcome of the process
waiting behind it: one queue that could not take its writes (here a key of another type; on a
Redis Cluster its primary down) stopped every queue's results until it could (docs/worker.md,
Durability window of the ack writer).
"""

from collections.abc import Iterator

import pytest

from django_threadmill.broker import Ack, Broker, Finish, Lease, Outcome, ProgressReport, Start
from django_threadmill.exceptions import BrokerUnavailable, PartlyAcked
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.progress import PendingProgress
from tests.support import wait_until
from tests.worker import tasks
from tests.worker.support import checked_writer

WORKER = "writer-test:1:abcd"
RETRY_MS = 60_000  # a retry's first write is its ZADD to the queue's delayed set


def retry(lease: Lease) -> Finish:
    return Finish(
        lease=lease,
        outcome=Outcome.RETRY,
        value='{"exception_class_path":"x","traceback":""}',
        started_ms=1,
        finished_ms=2,
        retry_delay_ms=RETRY_MS,
    )


def reserve(broker: Broker, queue: str) -> Lease:
    tasks.square.using(queue_name=queue).enqueue(2)
    [reservation] = broker.acquire(queue, 1).reservations
    return reservation.lease


def state(broker: Broker, lease: Lease) -> str:
    record = broker.record(lease.task_id)
    assert record is not None
    return str(record["state"])


@pytest.fixture
def writer(broker: Broker) -> Iterator[AckWriter]:
    with checked_writer(broker, WORKER) as writer:
        yield writer


def test_a_batch_spanning_queues_raises_what_the_queues_that_answered_recorded(
    broker: Broker,
) -> None:
    good, bad = reserve(broker, "default"), reserve(broker, "emails")
    broker.client.set(broker.queue_keys("emails").delayed, "another program's value")

    with pytest.raises(PartlyAcked) as raised:
        broker.finish(WORKER, [retry(good), retry(bad)])

    assert raised.value.answered == frozenset({good})
    assert "not written in queue emails, written in the others" in str(raised.value)
    assert state(broker, good) == "ready"  # its retry was recorded
    assert state(broker, bad) == "reserved"  # left as it was, lease held, for the next try

    broker.client.delete(broker.queue_keys("emails").delayed)
    rejected = broker.finish(WORKER, [retry(good), retry(bad)])
    assert [(item.lease, ack) for item, ack in rejected] == [(good, Ack.ALREADY)]
    assert state(broker, bad) == "ready"


def test_the_other_queues_outcomes_are_written_while_one_queue_s_wait_for_their_next_try(
    broker: Broker, writer: AckWriter, caplog: pytest.LogCaptureFixture
) -> None:
    first, stuck = reserve(broker, "default"), reserve(broker, "emails")
    delayed = broker.queue_keys("emails").delayed  # acquire reads it: broken once reserved
    broker.client.set(delayed, "another program's value")
    writer.submit_finish(retry(first))
    stuck_written = writer.submit_written(retry(stuck))  # a --sync-ack waiter for it
    writer.start()
    wait_until(lambda: "Ack batch failed kind=finish" in caplog.text, "a failed try")

    later = reserve(broker, "default")  # comes after the failed try, before the next one
    writer.submit_finish(retry(later))
    wait_until(lambda: state(broker, later) == "ready", "the later outcome of default")
    assert state(broker, first) == "ready"
    assert state(broker, stuck) == "reserved"
    assert not stuck_written.is_set()
    assert writer.pending() == 1  # in hand until written

    broker.client.delete(delayed)
    assert stuck_written.wait(10), "the kept outcome was never written"
    assert state(broker, stuck) == "ready"
    wait_until(lambda: writer.pending() == 0, "the writer's hands empty")


def test_a_stop_keeps_trying_what_waits_for_a_try_and_drops_it_once_given_up(
    broker: Broker, writer: AckWriter, caplog: pytest.LogCaptureFixture
) -> None:
    stuck = reserve(broker, "emails")
    broker.client.set(broker.queue_keys("emails").delayed, "another program's value")
    written = writer.submit_written(retry(stuck))
    writer.start()
    writer.stop()  # the end is queued: the writer keeps trying what it holds
    wait_until(lambda: "attempt=2 " in caplog.text, "a second try after the stop")
    assert writer.is_alive()

    writer.give_up_now()
    writer.join(10)
    assert not writer.is_alive(), "the writer went on past give_up_now"
    assert "Ack batch dropped at shutdown kind=finish size=1" in caplog.text
    assert written.is_set()  # the waiter is let go: its outcome is the reaper's now
    assert writer.dropped == 1
    assert writer.unwritten() == 1
    assert state(broker, stuck) == "reserved"


class ProgressLostBroker(Broker):
    """A real broker whose finish calls write the outcomes and, the first time, none of the
    progress reports riding along: as a Redis Cluster does with a running task's report on a
    primary that is down, beside outcomes of queues still served."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.lost = 0

    def finish(self, worker_id, finishes, progress=(), *, mark=""):  # type: ignore[no-untyped-def]
        if not progress or self.lost:
            return super().finish(worker_id, finishes, progress, mark=mark)
        rejected = super().finish(worker_id, finishes, mark=mark)
        self.lost += 1
        error = BrokerUnavailable("Error connecting to 127.0.0.1:1")
        raise PartlyAcked(
            f"progress reports not written, the outcomes were: {error}",
            error,
            answered=frozenset(finish.lease for finish in finishes),
            rejected=tuple(rejected),
            progress_unwritten=tuple(progress),
        )


def test_progress_reports_a_finish_call_did_not_write_are_sent_later_and_its_outcomes_stand(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    losing = ProgressLostBroker(broker)
    pending = PendingProgress()
    running, ended = reserve(broker, "emails"), reserve(broker, "default")
    losing.start(WORKER, [Start(lease=running, started_ms=1)])
    writer = AckWriter(losing, WORKER, HeldLeases(), pending, lambda: None, lambda: None)
    pending.put(ProgressReport(lease=running, done=3, total=10, note="riding"))
    writer.submit_finish(retry(ended))  # the report is due: it rides this call
    writer.start()
    try:
        wait_until(lambda: losing.lost == 1, "the finish call that lost the report")
        wait_until(
            lambda: (
                (broker.progress_fields(running.task_id) or {}).get("progress_note") == "riding"
            ),
            "the report, sent again on its own",
        )
    finally:
        writer.stop()
        writer.join(10)
    assert state(broker, ended) == "ready"
    assert "Ack batch failed" not in caplog.text  # no outcome waited for a try
