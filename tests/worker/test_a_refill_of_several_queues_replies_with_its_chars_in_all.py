"""One refill replies with at most ACQUIRE_CHARS of payloads across every queue and shard it
asks, not that much per queue (docs/worker.md, Memory a process keeps).

Each acquire call of a refill had the whole budget to itself: a worker of eight queues (or of a
queue split in eight shards) reserved 8 x 16 MiB of 1 MiB payloads in one refill, twice the
64 MiB the read-ahead is said to hold, and a worker of fifty queues 800 MiB.
"""

import pytest

from django_threadmill.broker import Broker, Reservation, acquisition
from django_threadmill.compat import task
from django_threadmill.worker.buffer import chars_of

BUDGET = 5000  # ACQUIRE_CHARS for these tests: a few tasks of 1,000 characters
PER_QUEUE = 12


@task
def carry(ballast: str) -> int:
    """A task whose payload is as large as ``ballast``."""
    return len(ballast)


def enqueued(queue: str, count: int = PER_QUEUE) -> set[str]:
    return {carry.using(queue_name=queue).enqueue("x" * 1000).id for _ in range(count)}


def chars(reservations: list[Reservation]) -> int:
    return sum(map(chars_of, reservations))


@pytest.fixture(autouse=True)
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acquisition, "ACQUIRE_CHARS", BUDGET)


def test_a_refill_of_several_queues_shares_one_budget(broker: Broker) -> None:
    queues = ("default", "emails", "reports")
    for queue in queues:
        enqueued(queue)

    replies = broker.acquire_from(dict.fromkeys(queues, PER_QUEUE))

    reserved = [r for acquired in replies for r in acquired.reservations]
    assert chars(reserved) <= BUDGET, f"{len(reserved)} tasks, {chars(reserved)} characters"
    assert all(acquired.reservations for acquired in replies)  # each queue its first task


def test_a_queue_to_many_asked_for_more_gets_more_of_the_budget(broker: Broker) -> None:
    for queue in ("default", "emails"):
        enqueued(queue)

    default, emails = broker.acquire_from({"default": 11, "emails": 1})

    assert len(emails.reservations) == 1
    assert len(default.reservations) == 3  # 11/12 of 5,000 characters, about 1,100 a task
    assert chars(default.reservations + emails.reservations) <= BUDGET


class TestShards:
    @pytest.fixture
    def tasks_options(self) -> dict[str, object]:
        return {"queue_shards": {"default": 4}}

    def test_a_refill_of_a_sharded_queue_shares_one_budget(self, broker: Broker) -> None:
        ids = enqueued("default", 4 * PER_QUEUE)

        [acquired] = broker.acquire_from({"default": 4 * PER_QUEUE})

        reserved = acquired.reservations
        assert chars(reserved) <= BUDGET, f"{len(reserved)} tasks, {chars(reserved)} characters"
        assert {r.lease.task_id for r in reserved} <= ids
