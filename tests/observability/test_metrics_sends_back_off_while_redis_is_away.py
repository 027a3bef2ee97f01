"""A metrics send that fails backs off, as the other Redis loops of the worker do, and loses
nothing: the metrics go once Redis answers again, or at the stop.

The ack writer sent its tally about once a second whatever came of it, so while Redis was away
it logged ``Metrics not sent`` every second: an outage of an hour was 3,600 WARNING lines from
each worker process, where the fetch loop says so once per backoff (docs/observability.md, What
it costs).
"""

import logging
import re

import pytest
import redis

from django_threadmill.broker import Broker
from django_threadmill.broker.scripts import ScriptName
from django_threadmill.worker import ack_writer, extras
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.backoff import REDIS_BACKOFF, Backoff
from tests.broker.conftest import finish
from tests.observability.lost_replies import Losses, lose_replies
from tests.observability.test_outcomes_counted_once_and_tracers_that_raise import (
    counted,
    reserved,
    writer,
)
from tests.support import wait_until

__all__ = ["writer"]  # the ack writer of a test, joined at its end
# The send interval, made short so that the backoff, not the interval, sets the waits here.
METRICS_SEND_S = 0.01
FAILED_SENDS = 4  # in a row while Redis is away
WAITS_S = [max(METRICS_SEND_S, REDIS_BACKOFF.after(n)) for n in range(1, FAILED_SENDS + 1)]
NOT_SENT = "Metrics not sent, keeping them for the next try"


@pytest.fixture(autouse=True)
def short_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send metrics every ``METRICS_SEND_S``: set before the writer is made, which reads it."""
    monkeypatch.setattr(extras, "METRICS_SEND_S", METRICS_SEND_S)


@pytest.fixture
def losses(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> Losses:
    """Fail the metrics sends as ``Losses`` says; with ``ran`` False, as Redis away does."""
    return lose_replies(broker, monkeypatch, ScriptName.METRICS)


def failed_sends(caplog: pytest.LogCaptureFixture) -> list[tuple[int, float]]:
    """Return the attempt and the wait of each ``Metrics not sent`` line, in order; a line
    that names neither counts as attempt 0 with no wait."""
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(NOT_SENT)]
    found = [re.search(r"attempt=(\d+) retry_in_s=([\d.]+)", line) for line in lines]
    return [(int(match[1]), float(match[2])) if match else (0, 0.0) for match in found]


def test_failed_metrics_sends_back_off_and_the_metrics_are_sent_once_redis_answers(
    broker: Broker,
    losses: Losses,
    writer: AckWriter,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.WARNING, logger=ack_writer.__name__)
    keys = broker.queue_keys("default")
    leases = reserved(broker, 3)
    for lease in leases:  # queued before the thread starts: one batch
        writer.submit_finish(finish(lease))
    losses.left, losses.ran = FAILED_SENDS, False
    writer.start()

    wait_until(lambda: counted(redis_client, keys)[0], "the metrics sent once Redis answers")
    assert failed_sends(caplog) == [
        (attempt, pytest.approx(wait_s)) for attempt, wait_s in enumerate(WAITS_S, 1)
    ]
    assert counted(redis_client, keys) == ({"successful": "3"}, {x.task_id for x in leases})

    # A success starts the backoff over; the stop sends what waits, whatever its backoff (an
    # hour here, so that only the stop can have sent it).
    monkeypatch.setattr(extras, "REDIS_BACKOFF", Backoff(first_s=3600.0, max_s=3600.0))
    later = reserved(broker, 2)
    losses.left = 1
    for lease in later:
        writer.submit_finish(finish(lease))
    wait_until(lambda: len(failed_sends(caplog)) > FAILED_SENDS, "a failed send after the success")
    assert failed_sends(caplog)[FAILED_SENDS:] == [(1, 3600.0)]
    writer.stop()
    writer.join(5)

    assert counted(redis_client, keys) == (
        {"successful": "5"},
        {x.task_id for x in [*leases, *later]},
    )
    assert not broker.tally
