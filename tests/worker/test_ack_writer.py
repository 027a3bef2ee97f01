"""The ack writer batches with no timer, elides starts, and never loses an ack."""

from collections.abc import Iterator, Sequence

import pytest

from django_threadmill.broker import Broker, Finish, Outcome, ProgressReport, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.worker import ack_writer
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.progress import PendingProgress
from tests.support import wait_until
from tests.worker import tasks

WORKER = "writer-test:1:abcd"


class RecordingBroker(Broker):
    """A real broker that also remembers the batches it was asked to write."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.calls: list[tuple[str, int]] = []

    def start(self, worker_id: str, starts: Sequence[Start]) -> list[Start]:
        self.calls.append(("start", len(starts)))
        return super().start(worker_id, starts)

    def finish(
        self, worker_id: str, finishes: Sequence[Finish], progress: Sequence[ProgressReport] = ()
    ) -> list[Finish]:
        self.calls.append(("finish", len(finishes)))
        return super().finish(worker_id, finishes, progress)


@pytest.fixture
def recording(broker: Broker) -> RecordingBroker:
    return RecordingBroker(broker)


@pytest.fixture
def writer(recording: RecordingBroker) -> Iterator[AckWriter]:
    crashes: list[str] = []
    writer = AckWriter(
        recording,
        WORKER,
        HeldLeases(),
        PendingProgress(),
        lambda: None,
        lambda: crashes.append("x"),
    )
    yield writer
    writer.stop()
    writer.join(5)
    assert not crashes


def finish(lease, outcome: Outcome = Outcome.SUCCESSFUL) -> Finish:  # type: ignore[no-untyped-def]
    value = "1" if outcome is Outcome.SUCCESSFUL else '{"exception_class_path":"x","traceback":""}'
    return Finish(lease=lease, outcome=outcome, value=value, started_ms=1, finished_ms=2)


def test_a_queued_burst_is_one_finish_call_and_starts_with_results_are_elided(
    broker: Broker, recording: RecordingBroker, writer: AckWriter
) -> None:
    for n in range(10):
        tasks.square.enqueue(n)
    leases = [r.lease for r in broker.acquire("default", 10).reservations]
    for lease in leases:  # queued before the thread starts: one drain takes them all
        writer.submit_start(Start(lease=lease, started_ms=now_ms()))
        writer.submit_finish(finish(lease))
    writer.submit_finish(finish(leases[0], Outcome.FAILED))  # a duplicate: stale, dropped
    writer.start()
    writer.stop()
    writer.join(5)

    # Failures ride with successes: one call each kept a failing burst waiting in memory.
    assert recording.calls == [("finish", 11)]
    records = [broker.record(lease.task_id) for lease in leases]
    assert all(record and record["state"] == "successful" for record in records)
    assert all(record and record["workers"] == WORKER for record in records)
    assert writer.pending() == 0


def test_results_go_in_calls_of_bounded_size_a_larger_one_alone(
    broker: Broker,
    recording: RecordingBroker,
    writer: AckWriter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One call of every result in a burst could pass Redis's request limit and fail for
    good, holding up every outcome behind it."""
    monkeypatch.setattr(ack_writer, "FINISH_CALL_CHARS", 10)
    for n in range(5):
        tasks.square.enqueue(n)
    leases = [r.lease for r in broker.acquire("default", 5).reservations]
    values = ["1234", "1234", "1234", '"' + "x" * 20 + '"', "1"]
    for lease, value in zip(leases, values, strict=True):
        writer.submit_finish(finish(lease)._replace(value=value))
    writer.start()
    writer.stop()
    writer.join(5)

    assert recording.calls == [("finish", 2), ("finish", 1), ("finish", 1), ("finish", 1)]
    assert broker.record(leases[3].task_id)["result"] == '"' + "x" * 20 + '"'  # type: ignore[index]


def test_sync_ack_returns_only_once_the_result_is_written(
    broker: Broker, writer: AckWriter
) -> None:
    result = tasks.square.enqueue(3)
    [reservation] = broker.acquire("default", 1).reservations
    writer.start()
    writer.submit_finish(finish(reservation.lease), wait=True)
    record = broker.record(result.id)
    assert record is not None
    assert record["state"] == "successful"


def test_a_start_whose_result_does_not_follow_soon_is_sent(
    broker: Broker, recording: RecordingBroker, writer: AckWriter
) -> None:
    long_running = tasks.square.enqueue(1)
    [reservation] = broker.acquire("default", 1).reservations
    writer.start()
    writer.submit_start(Start(lease=reservation.lease, started_ms=now_ms()))
    wait_until(lambda: long_running.refresh() or long_running.status == "RUNNING", "start notice")
    assert recording.calls == [("start", 1)]
    assert long_running.worker_ids == [WORKER]


def test_an_ack_not_recorded_is_logged_by_why(
    broker: Broker, writer: AckWriter, caplog: pytest.LogCaptureFixture
) -> None:
    """A retried call whose first try landed is no news (INFO); another owner settling the
    task, or its record gone (a Redis that lost its data), is worth a look (WARNING), each
    saying which; a damaged record needs an operator (ERROR)."""
    for n in range(4):
        tasks.square.enqueue(n)
    leases = [r.lease for r in broker.acquire("default", 4).reservations]
    landed, released, damaged, gone = leases
    assert broker.finish(WORKER, [finish(landed)]) == []  # the first try landed
    assert broker.release([released]) == 1  # handed back: another owner's now
    broker.client.delete(broker.queue_keys("default").record(damaged.task_id))
    broker.client.set(broker.queue_keys("default").record(damaged.task_id), "garbage")
    broker.client.delete(broker.queue_keys("default").record(gone.task_id))

    with caplog.at_level("INFO", logger="django_threadmill.worker.ack_writer"):
        for lease in leases:
            writer.submit_finish(finish(lease))
        writer.start()
        writer.stop()
        writer.join(5)

    said = {
        record.getMessage().split("task_id=")[1].split(":")[0]: (
            record.levelname,
            record.getMessage().split(": ", 1)[1].split(" (")[0],
        )
        for record in caplog.records
        if record.getMessage().startswith("Ack not recorded")
    }
    assert said == {
        landed.task_id: ("INFO", "already recorded under this lease"),
        released.task_id: ("WARNING", "settled or held by another owner"),
        damaged.task_id: ("ERROR", "its record cannot be read and was set aside"),
        gone.task_id: ("WARNING", "its record is gone"),
    }
