"""An outbox entry whose advance raises something unexpected (a bug, damage nobody foresaw)
stays in the outbox, is tried again a minute later, and stops neither the drain nor the other
entries (docs/workflows.md, An entry that cannot be advanced)."""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.workflows import OUTBOX_BATCH
from django_threadmill.testing import drain as run_tasks
from django_threadmill.workflows import WorkflowResult, advance, chain, step
from django_threadmill.workflows.advance import drain
from django_threadmill.workflows.failed_entries import RETRY_AFTER_S, FailedEntries
from tests.support import HandClock

from .tasks import add, number


def a_bug_in(monkeypatch: pytest.MonkeyPatch, broken: set[str]) -> list[str]:
    """Make advancing from the steps ``broken`` raise; return the ids advancing was tried on."""
    tried: list[str] = []
    advance_from = advance.advance_from

    def buggy(
        backend: ThreadmillTaskBackend, task_id: str, part: str | None = None
    ) -> advance.Advance:
        tried.append(task_id)
        if task_id in broken:
            raise RuntimeError(f"a bug met {task_id}")
        return advance_from(backend, task_id, part)

    monkeypatch.setattr(advance, "advance_from", buggy)
    return tried


def last_value(flow: WorkflowResult) -> object:
    """The return value of the workflow's last step, read again."""
    flow.refresh()
    last = flow.results[-1]
    assert last is not None, "the last step was never enqueued"
    return last.return_value


def outbox(backend: ThreadmillTaskBackend) -> list[str]:
    return backend.broker.client.lrange(backend.broker.queue_keys("default").outbox, 0, -1)


def test_an_entry_that_raises_stays_and_the_entries_after_it_advance(
    backend: ThreadmillTaskBackend,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = chain(step(number, 1), step(add, 1)).enqueue()
    good = chain(step(number, 2), step(add, 2)).enqueue()
    a_bug_in(monkeypatch, {bad.steps[0].task_id})

    run_tasks()

    assert outbox(backend) == [bad.steps[0].task_id]
    assert "RuntimeError: a bug met" in caplog.text
    assert "Workflow not advanced from a step, its outbox entry stays" in caplog.text
    assert last_value(good) == 4
    assert backend.broker.record(bad.steps[1].task_id) is None  # not enqueued: not advanced


def test_a_held_entry_is_passed_over_until_a_minute_has_passed_then_advances(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    tried = a_bug_in(monkeypatch, {flow.steps[0].task_id})
    run_tasks()  # runs the first step; its entry fails once, in the helper's own drain
    clock = HandClock(1000.0)
    failed = FailedEntries(clock)

    assert drain(backend, "default", failed) == 0  # fails, and is held from now on
    assert drain(backend, "default", failed) == 0  # held: not even tried
    assert tried == [flow.steps[0].task_id] * 2
    clock.now += RETRY_AFTER_S - 0.001
    assert drain(backend, "default", failed) == 0
    assert len(tried) == 2

    monkeypatch.undo()  # the bug is fixed
    clock.now += 1
    assert drain(backend, "default", failed) == 1
    assert outbox(backend) == []
    run_tasks()
    assert last_value(flow) == 2


def test_a_full_batch_of_entries_that_raise_does_not_hide_the_entries_after_it(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = {f"broken-{n}@default" for n in range(OUTBOX_BATCH + 1)}
    client, key = backend.broker.client, backend.broker.queue_keys("default").outbox
    client.rpush(key, *sorted(broken))
    flow = chain(step(number, 3), step(add, 3)).enqueue()
    a_bug_in(monkeypatch, broken)

    run_tasks()

    assert sorted(outbox(backend)) == sorted(broken)
    assert last_value(flow) == 6
