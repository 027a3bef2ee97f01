"""A progress report sent while its queue's hash slot migrates is written, or kept to send again.

A resharding MIGRATEs a slot's keys one at a time, so for a while a queue's records and its
indexes sit on two nodes. Redis routes a script by the keys it declares: progress.lua declared
the record prefix alone, a key that never exists, so the owner sent it on (ASK) to the
importing node, which ran it, found no record there and answered "fenced out". The ack writer
takes that for an attempt that ended and drops the report: a task's last report before a
quiet stretch never reached its result. The slot is put in migration by hand (CLUSTER SETSLOT),
and the keys chosen are MIGRATEd, as ``redis-cli --cluster reshard`` does.
"""

import threading
from collections.abc import Callable, Sequence

import pytest

from django_threadmill.broker import Broker, Finish, Lease, Outcome, ProgressReport
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.progress import PendingProgress
from tests.backend_support import WORKER

from .slot_migration import Move, running, start_move

__all__ = ["start_move"]  # the fixture


def note_of(broker: Broker, lease: Lease) -> str | None:
    return (broker.progress_fields(lease.task_id) or {}).get("progress_note")


class SendsSeen(Broker):
    """A real broker that says when a progress send returned or raised."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.sent = threading.Event()

    def send_progress(self, reports: Sequence[ProgressReport]) -> int:
        try:
            return super().send_progress(reports)
        finally:
            self.sent.set()


def test_the_last_report_sent_before_the_records_moved_reaches_the_result(
    broker: Broker, start_move: Callable[[], Move]
) -> None:
    [lease] = running(broker, 1)
    move = start_move()
    move.migrate(keep=lambda key: key == move.keys.record(lease.task_id))  # the record stays
    seen, crashes = SendsSeen(broker), list[str]()
    writer = AckWriter(
        seen, WORKER, HeldLeases(), PendingProgress(), lambda: None, lambda: crashes.append("x")
    )
    writer.start()
    try:
        writer.progress.put(ProgressReport(lease=lease, done=9, total=10, note="nearly"))
        assert seen.sent.wait(30), "the report never went out"
        move.finish()
        done = Finish(lease=lease, outcome=Outcome.SUCCESSFUL, value="1", started_ms=1,
                      finished_ms=2)  # fmt: skip
        writer.submit_finish(done, wait=True)
    finally:
        writer.stop()
        writer.join(30)

    assert not crashes
    assert (broker.record(lease.task_id) or {}).get("state") == "successful"
    assert note_of(broker, lease) == "nearly"


def test_reports_whose_records_are_split_between_nodes_are_refused_until_the_move_ends(
    broker: Broker, start_move: Callable[[], Move]
) -> None:
    leases = running(broker, 2)
    move = start_move()
    move.migrate(keep=lambda key: key == move.keys.record(leases[0].task_id))
    reports = [ProgressReport(lease=lease, done=1, total=2, note="half") for lease in leases]

    with pytest.raises(BrokerUnavailable, match="cannot serve this call now"):
        broker.send_progress(reports)  # not "fenced out": the ack writer sends it again
    move.finish()
    assert broker.send_progress(reports) == 2
    assert [note_of(broker, lease) for lease in leases] == ["half", "half"]


def test_reports_run_where_their_records_are_before_and_after_they_moved(
    broker: Broker, start_move: Callable[[], Move]
) -> None:
    staying, moved = running(broker, 2)
    move = start_move()
    assert broker.send_progress([ProgressReport(lease=staying, done=1, total=None, note="")]) == 1
    move.migrate(keep=lambda key: key == move.keys.record(staying.task_id))
    assert broker.send_progress([ProgressReport(lease=moved, done=2, total=None, note="")]) == 1
    assert broker.send_progress([ProgressReport(lease=staying, done=3, total=None, note="")]) == 1
