"""release.lua under a rate limit: a reserved task handed back, never started, gives its queue
back the reservation turn it took, one turn per task.

A worker stopped by a deploy hands back what it reserved and did not start; under "1/h" the
turn its reservation took kept the next worker from reserving the same task for an hour,
though nothing had started (docs/schedules.md, Per-queue limits).
"""

import pytest

from django_threadmill.broker import Broker

from .conftest import fill, start

LIMITS = {"emails": {"rate": "1/h"}}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": LIMITS}


def acquired_ids(broker: Broker) -> list[str]:
    return [r.lease.task_id for r in broker.acquire("emails", 10).reservations]


def test_a_task_handed_back_is_reserved_again_at_once(broker: Broker) -> None:
    first, _second = fill(broker, "emails", 2)
    (reservation,) = broker.acquire("emails", 10).reservations
    assert broker.release([reservation.lease]) == 1
    assert acquired_ids(broker) == [first]
    assert acquired_ids(broker) == []  # one turn given back, not the rate lifted


def test_a_started_task_gives_no_turn_back(broker: Broker) -> None:
    fill(broker, "emails", 2)
    (reservation,) = broker.acquire("emails", 10).reservations
    broker.start("worker-a", [start(reservation.lease)])
    assert broker.release([reservation.lease]) == 0
    assert acquired_ids(broker) == []
