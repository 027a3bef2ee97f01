"""What the worker says, and how often: a progress send Redis fails backs off as a failed ack
batch does, keeping each attempt's latest report; a worker serving a paused queue says so at
start, and a burst names the paused queues it leaves tasks in; a report of -0.0 is stored as 0.

The module runs on a Redis of its own, which the progress test kills and starts again.
"""

import logging
import math
import re

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease, ProgressReport, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.progress import progress_of
from django_threadmill.testing import drain
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.progress import PendingProgress
from testproject.example.tasks import add
from tests.progress.tasks import reports_unknown_total
from tests.servers.redis_server import RedisProcess
from tests.support import HandClock, run_to_completion, worker
from tests.worker import tasks

WORKER = "progress-away:1:abcd"
# The waits between tries of a progress send while Redis is away: the ack writer's backoff
# (0.05 s doubling to 5 s), never less than the 0.5 s interval reports go out at.
PROGRESS_WAITS_S = [0.5, 0.5, 0.5, 0.5, 0.8, 1.6, 3.2, 5.0, 5.0]
NOT_SENT = "Progress not sent, keeping it for the next try"


@pytest.fixture
def redis_url(durable_redis: RedisProcess) -> str:
    """Run this module on a server of its own, which a test kills and starts again."""
    return durable_redis.url


@pytest.fixture
def running(broker: Broker) -> Lease:
    tasks.square.enqueue(2)
    [reservation] = broker.acquire("default", 1).reservations
    assert broker.start(WORKER, [Start(lease=reservation.lease, started_ms=now_ms())]) == []
    return reservation.lease


def report(lease: Lease, n: int) -> ProgressReport:
    return ProgressReport(lease=lease, done=n, total=100, note=f"#{n}")


def failed_sends(caplog: pytest.LogCaptureFixture) -> list[tuple[int, float]]:
    """Return the attempt and the wait of each ``Progress not sent`` line, in order."""
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(NOT_SENT)]
    found = [re.search(r"attempt=(\d+) retry_in_s=([\d.]+)", line) for line in lines]
    return [(int(match[1]), float(match[2])) for match in found if match]


def test_progress_sends_back_off_while_redis_is_away_and_keep_the_latest_report(
    broker: Broker,
    durable_redis: RedisProcess,
    running: Lease,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = HandClock(1000.0)
    pending = PendingProgress(clock=clock)
    writer = AckWriter(broker, WORKER, HeldLeases(), pending, lambda: None, lambda: None)
    caplog.set_level(logging.WARNING, logger="django_threadmill.worker.ack_writer")

    durable_redis.kill()
    waits = []
    for n in range(1, len(PROGRESS_WAITS_S) + 1):
        pending.put(report(running, n))  # a task reporting on while Redis is away
        writer.extras.send_progress(flush=False)  # the writer's send, each time one is due
        wait_s = pending.wait_s()
        assert wait_s is not None  # kept
        waits.append(wait_s)
        clock.now += wait_s
    durable_redis.start()
    writer.extras.send_progress(flush=False)

    assert waits == pytest.approx(PROGRESS_WAITS_S)
    assert failed_sends(caplog) == [
        (attempt, pytest.approx(wait_s)) for attempt, wait_s in enumerate(PROGRESS_WAITS_S, 1)
    ]
    assert pending.wait_s() is None  # sent: the latest report of each attempt, nothing lost
    assert (broker.progress_fields(running.task_id) or {})["progress_note"] == f"#{len(waits)}"

    durable_redis.kill()  # a success started the backoff over
    clock.now += PROGRESS_WAITS_S[0]
    pending.put(report(running, 100))
    writer.extras.send_progress(flush=False)
    durable_redis.start()
    assert failed_sends(caplog)[-1] == (1, PROGRESS_WAITS_S[0])
    assert pending.take(flush=True) == [report(running, 100)]


def test_a_worker_says_which_queues_it_serves_are_paused_and_a_burst_what_it_left_there(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    held = [add.enqueue(1, 2), add.enqueue(3, 4)]
    backend.broker.pause("default", "ada in the admin", "mail provider down")
    backend.broker.pause("reports", "bob")  # paused, and nothing in it

    log = run_to_completion(worker(redis_url, key_prefix, "--burst"))

    started = re.findall(r"Queue paused, its tasks wait until it is resumed (.*)", log)
    assert [line.split(" at=")[0] for line in started] == [
        "queue=default by=ada in the admin",
        "queue=reports by=bob",
    ], log
    when = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"  # ISO 8601, UTC, to the second
    assert re.search(rf" at={when} reason=mail provider down$", started[0]), started
    ended = re.findall(r"Burst ends with tasks left in paused queues queues=(\S+):", log)
    assert ended == ["default:2"], log  # reports holds none: not named
    assert "threadmill_queue resume <queue> --backend default" in log
    for result in held:
        result.refresh()
        assert result.status == TaskResultStatus.READY


def test_a_burst_beside_no_paused_queue_says_nothing_of_pauses(
    redis_url: str, key_prefix: str
) -> None:
    result = add.enqueue(1, 2)

    log = run_to_completion(worker(redis_url, key_prefix, "--burst"))

    assert "paused" not in log.lower(), log
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL


def test_a_report_of_minus_zero_is_stored_as_zero(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    result = reports_unknown_total.enqueue(-0.0)

    assert drain() == 1

    assert (broker.progress_fields(result.id) or {})["progress_done"] == "0.0"
    progress = progress_of(result)
    assert progress is not None
    assert math.copysign(1, progress.done) == 1
