"""Progress reports are coalesced: each attempt's latest, sent at most every interval with a
call the ack writer makes anyway or alone, and a finishing attempt's last report with its
outcome. Counted on an injected clock, so the figures do not depend on timing."""

from collections.abc import Callable, Iterator, Sequence

import pytest
import redis

from django_threadmill.broker import Broker, Finish, Lease, Outcome, ProgressReport, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.progress import PROGRESS_SEND_S, PendingProgress
from tests.support import HandClock, command_calls, wait_until
from tests.worker import tasks

WORKER = "progress-test:1:abcd"
REPORTS = 10_000


Clock = HandClock[float]  # monotonic seconds


class CountingBroker(Broker):
    """A real broker that also counts the progress reports each call carried."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.sent: list[tuple[str, int]] = []

    def send_progress(self, reports: Sequence[ProgressReport]) -> int:
        self.sent.append(("alone", len(reports)))
        return super().send_progress(reports)

    def finish(
        self, worker_id: str, finishes: Sequence[Finish], progress: Sequence[ProgressReport] = ()
    ) -> list[Finish]:
        self.sent.append(("with finish", len(progress)))
        return super().finish(worker_id, finishes, progress)


def report(lease: Lease, n: int) -> ProgressReport:
    return ProgressReport(lease=lease, done=n, total=REPORTS, note=f"#{n}")


def test_each_attempt_keeps_its_latest_report_until_due() -> None:
    clock = Clock(1000.0)
    pending = PendingProgress(clock=clock)
    firsts: list[None] = []
    pending.on_first = lambda: firsts.append(None)
    one, two = (Lease(task_id=name, queue="default", token="1") for name in ("one", "two"))

    for n in range(1, REPORTS + 1):
        pending.put(report(one, n))
    pending.put(report(two, 1))
    assert pending.take() == [report(one, REPORTS), report(two, 1)]  # due at once
    assert len(firsts) == 1

    pending.put(report(one, 1))
    pending.put(report(two, 2))
    assert pending.wait_s() == PROGRESS_SEND_S
    assert pending.take() == []  # not due: nothing
    assert pending.take([two]) == [report(two, 2)]  # but a finishing attempt's, at once
    clock.now += PROGRESS_SEND_S
    assert pending.wait_s() == 0
    pending.put_back([report(one, 0)])  # a failed send: the newer report stays
    assert pending.take() == [report(one, 1)]
    assert pending.wait_s() is None
    assert len(firsts) == 2


@pytest.fixture
def counting(broker: Broker) -> CountingBroker:
    return CountingBroker(broker)


@pytest.fixture
def clock() -> Clock:
    return Clock(1000.0)


@pytest.fixture
def writer(counting: CountingBroker, clock: Clock) -> Iterator[AckWriter]:
    crashes: list[str] = []
    writer = AckWriter(
        counting,
        WORKER,
        HeldLeases(),
        PendingProgress(clock=clock),
        lambda: None,
        lambda: crashes.append("x"),
    )
    writer.start()
    yield writer
    writer.stop()
    writer.join(5)
    assert not crashes


@pytest.fixture
def running(broker: Broker) -> Lease:
    tasks.square.enqueue(2)
    [reservation] = broker.acquire("default", 1).reservations
    assert broker.start(WORKER, [Start(lease=reservation.lease, started_ms=now_ms())]) == []
    return reservation.lease


@pytest.fixture
def note_of(broker: Broker) -> Callable[[Lease], str | None]:
    return lambda lease: broker.progress_fields(lease.task_id)["progress_note"]


def test_a_tight_loop_of_reports_costs_one_call_per_interval(
    writer: AckWriter,
    counting: CountingBroker,
    running: Lease,
    clock: Clock,
    redis_client: redis.Redis,
    note_of: Callable[[Lease], str | None],
) -> None:
    counting.send_progress([report(running, 0)])  # loads the script
    counting.sent.clear()
    redis_client.config_resetstat()
    for n in range(1, REPORTS + 1):  # the first goes out at once, and some later one
        writer.progress.put(report(running, n))
    wait_until(lambda: counting.sent, "the first reports going out at once")
    for n in range(REPORTS + 1, 2 * REPORTS + 1):  # none is due before the clock moves
        writer.progress.put(report(running, n))
    clock.now += PROGRESS_SEND_S
    wait_until(lambda: note_of(running) == f"#{2 * REPORTS}", "the latest report going out")

    assert counting.sent == [("alone", 1), ("alone", 1)]
    written = command_calls(redis_client)  # its HMGETs include the test's own reads of the note
    assert (written["evalsha"], written["hset"]) == (2, 2)  # 20,000 reports, two writes


def test_the_last_report_rides_its_finish_call(
    writer: AckWriter,
    counting: CountingBroker,
    running: Lease,
    broker: Broker,
    note_of: Callable[[Lease], str | None],
) -> None:
    writer.progress.put(report(running, 1))
    wait_until(lambda: note_of(running) == "#1", "the first report going out at once")
    writer.progress.put(report(running, 2))  # not due until the clock moves
    writer.submit_finish(
        Finish(lease=running, outcome=Outcome.SUCCESSFUL, value="4", started_ms=1, finished_ms=2),
        wait=True,
    )

    assert counting.sent == [("alone", 1), ("with finish", 1)]
    assert note_of(running) == "#2"
    assert (broker.record(running.task_id) or {})["state"] == "successful"
