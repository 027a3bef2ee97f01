"""The ERROR line of an ack batch Redis applied but refused to confirm (OPTIONS['durability'],
its WAIT or WAITAOF taken away by an ACL) names at most 20 task ids, and counts the others in
the same field: ``task_ids=a,b,...,+30_more``.

It named every task of the batch: the ack writer sends all it holds in one batch, thousands of
outcomes after a slow spell, whose ids made one line of tens of KB (wording.listed_values).
"""

import logging
from collections.abc import Sequence

import pytest

from django_threadmill.broker import Broker, Rejected, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.exceptions import ConfirmationRefused
from django_threadmill.wording import MAX_LISTED_IDS
from tests.lifecycle.support import reserve
from tests.worker import tasks

from .support import unstarted_writer

BATCH = MAX_LISTED_IDS + 30  # start notices in the one batch refused
REFUSED = ConfirmationRefused("NOPERM this user has no permissions to run the 'wait' command")


def refused(worker_id: str, items: Sequence[Start]) -> list[Rejected[Start]]:
    """Send a batch as Redis does that applies it and refuses the WAIT confirming it."""
    raise REFUSED


def field(line: str, name: str) -> list[str]:
    """Return the items of the ``name=a,b,c`` field of ``line``."""
    [value] = [word for word in line.split() if word.startswith(f"{name}=")]
    return value.removeprefix(f"{name}=").split(",")


def test_a_refused_confirmation_of_fifty_starts_names_twenty_ids_and_counts_the_others(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(BATCH):
        tasks.square.enqueue(n)
    leases = [reservation.lease for reservation in reserve(broker)]
    writer = unstarted_writer(broker)

    starts = [Start(lease=lease, started_ms=now_ms()) for lease in leases]

    with caplog.at_level(logging.ERROR, logger="django_threadmill"):
        left = writer._send("start", starts, refused)

    [line] = [m for m in caplog.messages if m.startswith("Ack batch applied but not confirmed")]
    *named, more = field(line, "task_ids")
    assert left == ([], None)
    assert f"kind=start size={BATCH} " in line
    assert named == [lease.task_id for lease in leases[:MAX_LISTED_IDS]]
    assert more == f"+{BATCH - MAX_LISTED_IDS}_more"
