"""The admin's task list reads each record on the node that holds it while its queue's hash slot
migrates, or fails retryably while the records it reads are split between two nodes.

row_fields.lua declared the record prefix alone, a key that never exists, so the owner sent the
call on (ASK) to the importing node, which read every record not moved yet as gone: the list
lost those rows, and a bulk action read their state as gone and skipped them. It now declares
the records it reads, as progress.lua does (docs/scaling.md, Limits).
"""

from collections.abc import Callable

import pytest

from django_threadmill.broker import Broker
from django_threadmill.exceptions import BrokerUnavailable

from .slot_migration import Move, running, start_move

__all__ = ["start_move"]  # the fixture

FIELDS = ("state", "payload")


def states(broker: Broker, task_ids: list[str]) -> list[bytes | None]:
    """The state of each record, read as the task list reads its rows."""
    rows = broker.cut_fields(task_ids, FIELDS, "payload", 64)
    return [None if row is None else row[0] for row in rows]


def test_rows_are_read_where_their_records_are_before_and_after_they_moved(
    broker: Broker, start_move: Callable[[], Move]
) -> None:
    staying, moved = (lease.task_id for lease in running(broker, 2))
    move = start_move()
    move.migrate(keep=lambda key: key in (move.keys.record(staying), move.keys.record(moved)))
    assert states(broker, [staying, moved]) == [b"running", b"running"]  # the indexes moved

    move.migrate(keep=lambda key: key == move.keys.record(staying))
    assert states(broker, [moved]) == [b"running"]
    assert states(broker, [staying]) == [b"running"]


def test_rows_whose_records_are_split_between_nodes_are_refused_until_the_move_ends(
    broker: Broker, start_move: Callable[[], Move]
) -> None:
    task_ids = [lease.task_id for lease in running(broker, 2)]
    move = start_move()
    move.migrate(keep=lambda key: key == move.keys.record(task_ids[0]))

    with pytest.raises(BrokerUnavailable, match="cannot serve this call now"):
        states(broker, task_ids)  # not two rows read as gone
    move.finish()
    assert states(broker, task_ids) == [b"running", b"running"]
