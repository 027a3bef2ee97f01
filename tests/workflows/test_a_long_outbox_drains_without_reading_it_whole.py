"""Draining a queue's workflow outbox reads each entry once, whatever the outbox's length.

Each entry a drainer took out (forget_entry.lua) was looked for again in the whole outbox
(``LPOS``), to tell whether another entry for the same step still waited: draining an outbox of
20,000 entries (a big group cancelled, or ending faster than its drainer advances) held Redis
3.4 s in all, a cost in the square of the outbox's length. A step's record now counts its
entries waiting (``outboxed``), kept by finish.lua and cancel.lua, and the drain reads no more
of the outbox than the entries it takes out. The commands are counted with ``INFO
commandstats``: no timing.
"""

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import chain, group, step
from django_threadmill.workflows.advance import drain_queues
from tests.support import command_calls

from .tasks import add, number

STEPS = 300


def record_ttl_ms(backend: ThreadmillTaskBackend, task_id: str) -> int:
    """The record's PTTL: -1 for none."""
    return backend.broker.client.pttl(backend.broker.record_key(task_id))


def outbox_len(backend: ThreadmillTaskBackend) -> int:
    return backend.broker.client.llen(backend.broker.queue_keys("default").outbox)


def first_step(backend: ThreadmillTaskBackend) -> str:
    """Enqueue a chain of two steps; return its first step's id."""
    return chain(step(number, 1), step(add, 1)).enqueue().steps[0].task_id


def test_a_drain_looks_for_no_entry_in_the_whole_outbox(backend: ThreadmillTaskBackend) -> None:
    flow = group(*(step(number, n) for n in range(STEPS))).enqueue()
    assert flow.cancel("the operator stopped the import")
    assert outbox_len(backend) == STEPS
    client = backend.broker.client
    client.config_resetstat()

    drain_queues(backend, ["default"])

    calls = command_calls(client)
    assert outbox_len(backend) == 0
    assert "lpos" not in calls, calls  # each looked through every entry after its own
    assert calls["lrem"] == STEPS  # one each, at the outbox's head
    assert all(record_ttl_ms(backend, s.task_id) > 0 for s in flow.steps)


def test_a_step_that_ended_twice_before_its_drain_expires_after_its_second_entry(
    backend: ThreadmillTaskBackend,
) -> None:
    """Cancelled, requeued and cancelled again: two entries wait; the record keeps no expiry
    until the drain took out both."""
    first = first_step(backend)
    assert backend.cancel(first, "by hand")
    backend.requeue(first)
    assert backend.cancel(first, "by hand, again")
    assert outbox_len(backend) == 2

    backend.broker.forget_outbox_entry("default", first)
    assert (outbox_len(backend), record_ttl_ms(backend, first)) == (1, -1)
    backend.broker.forget_outbox_entry("default", first)
    assert outbox_len(backend) == 0
    assert record_ttl_ms(backend, first) > 0


def test_a_record_written_before_the_count_reads_as_one_entry(
    backend: ThreadmillTaskBackend,
) -> None:
    first = first_step(backend)
    assert backend.cancel(first, "by hand")
    backend.broker.client.hdel(backend.broker.record_key(first), "outboxed")

    assert drain_queues(backend, ["default"]) == 1

    assert outbox_len(backend) == 0
    assert record_ttl_ms(backend, first) > 0


def test_a_count_written_by_hand_does_not_stop_the_step_ending(
    backend: ThreadmillTaskBackend,
) -> None:
    """A count that is no number fails no cancel or finish: it reads as one entry."""
    first = first_step(backend)
    backend.broker.client.hset(backend.broker.record_key(first), "outboxed", "many")

    assert backend.cancel(first, "by hand")
    assert drain_queues(backend, ["default"]) == 1

    assert outbox_len(backend) == 0
    assert record_ttl_ms(backend, first) > 0
