"""An ack batch the writer drops at its stop, or leaves to the reaper when Redis refuses this
worker, names its tasks on its ERROR line.

Those outcomes are lost: the reaper records each task FAILED with LeaseExpired once its lease
lapses (or runs it again, by its retry policy), a task that succeeded included. The lines said
only how many, so an operator could not tell which tasks that was (docs/observability.md,
Logging).
"""

import logging
from collections.abc import Iterator

import pytest

from django_threadmill.broker import Broker, Lease
from django_threadmill.exceptions import BrokerRefused
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.not_recorded import log_refused
from django_threadmill.worker.progress import PendingProgress
from tests.support import wait_until
from tests.worker import tasks
from tests.worker.test_acks_a_queue_cannot_take_wait_for_their_next_try_while_the_others_are_written import (  # noqa: E501
    retry,
)

WORKER = "writer-test:1:abcd"


def reserve(broker: Broker, queue: str) -> Lease:
    tasks.square.using(queue_name=queue).enqueue(2)
    [reservation] = broker.acquire(queue, 1).reservations
    return reservation.lease


@pytest.fixture
def writer(broker: Broker) -> Iterator[AckWriter]:
    writer = AckWriter(broker, WORKER, HeldLeases(), PendingProgress(), lambda: None, lambda: None)
    yield writer
    if writer.ident is not None:
        writer.give_up_now()
        writer.join(10)
    assert not writer.is_alive()


def test_a_batch_dropped_at_shutdown_names_its_tasks(
    broker: Broker, writer: AckWriter, caplog: pytest.LogCaptureFixture
) -> None:
    stuck = [reserve(broker, "emails") for _ in range(2)]
    broker.client.set(broker.queue_keys("emails").delayed, "another program's value")
    for lease in stuck:
        writer.submit_finish(retry(lease))
    writer.start()
    writer.stop()
    wait_until(lambda: "Ack batch failed kind=finish" in caplog.text, "a failed try")
    writer.give_up_now()
    writer.join(10)

    [line] = [r.getMessage() for r in caplog.records if "dropped at shutdown" in r.getMessage()]
    ids = ",".join(lease.task_id for lease in stuck)
    assert f"kind=finish size=2 task_ids={ids} error=" in line


def test_a_batch_left_to_the_reaper_names_its_tasks(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    leases = [reserve(broker, "default") for _ in range(22)]
    with caplog.at_level(logging.ERROR):
        log_refused(
            logging.getLogger("django_threadmill.worker.ack_writer"),
            "finish",
            [retry(lease) for lease in leases],
            BrokerRefused("NOPERM this user has no permissions to run the 'evalsha' command"),
        )
    [line] = [r.getMessage() for r in caplog.records]
    ids = ",".join(lease.task_id for lease in leases[:20])
    assert line.startswith(
        f"Ack batch left to the reaper kind=finish size=22 task_ids={ids},+2_more "
    )
