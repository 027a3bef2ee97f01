"""Admin actions while workers move the tasks they act on: each task is acted on once, none
that stays in the filter is missed, and the messages say what happened, in bounded size."""

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from django_threadmill.admin import listing
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome
from django_threadmill.broker.inspect import Inspector
from django_threadmill.codec.results import error_json
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.wording import MAX_LISTED_IDS
from testproject.example.tasks import add
from tests.admin.conftest import failed_task, post_action
from tests.backend_support import WORKER, reserve, start

WINDOW = 3  # index entries a walk reads at a time here: a few tasks make several windows
HOUR_MS = 3_600_000

type Windows = dict[str, list[tuple[str, float]]]  # per queue, the (id, score) of a window


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "SCAN_CHUNK", WINDOW)


def after_read(
    monkeypatch: pytest.MonkeyPatch, reads: int, move: Callable[[Windows], object]
) -> None:
    """Run ``move`` once, right after the walk's ``reads``-th read of index windows (one per
    index), with what that read found: a worker or an operator moving tasks while an action
    walks its filter."""
    windows = Inspector.windows
    done = [0]

    def moving(self: Inspector, *args: Any, **kwargs: Any) -> Windows:
        found = windows(self, *args, **kwargs)
        done[0] += 1
        if done[0] == reads:
            move(found)
        return found

    monkeypatch.setattr(Inspector, "windows", moving)


def on_filter(client: Client, action: str, status: str) -> list[str]:
    return post_action(client, {"action": action, "across": "1", "status": status})


def statuses(backend: ThreadmillTaskBackend, task_ids: list[str]) -> list[TaskResultStatus]:
    return [backend.get_result(task_id).status for task_id in task_ids]


def test_a_cancel_on_a_filter_misses_no_task_behind_those_workers_took_meanwhile(
    operator: Client,
    backend: ThreadmillTaskBackend,
    small_windows: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read by rank, the second window began two places too far once a worker took the first
    two tasks: two READY tasks were never cancelled (and ran), and the message said nothing."""
    task_ids = [add.enqueue(1, n).id for n in range(3 * WINDOW)]
    after_read(monkeypatch, 1, lambda _: [reserve(backend, task_id) for task_id in task_ids[:2]])

    messages = on_filter(operator, "cancel", "ready")

    assert messages == [f"{len(task_ids) - 2} tasks cancelled."]
    assert statuses(backend, task_ids[2:]) == [TaskResultStatus.FAILED] * (len(task_ids) - 2)


def another_fails(backend: ThreadmillTaskBackend, late: list[str]) -> Callable[[Windows], None]:
    """A result that finishes meanwhile, newest: it pushed the others one place down, and the
    next window read a task again, requeued it twice and said "left alone: … READY now"."""
    return lambda _: late.append(failed_task(backend))


def another_operator_requeues(
    backend: ThreadmillTaskBackend, late: list[str]
) -> Callable[[Windows], None]:
    """Two results of the window read, requeued by another operator: they left the index, and
    the next window began two places too far, leaving two FAILED tasks never requeued."""

    def requeue(found: Windows) -> None:
        for task_id, _ in found["default"][:2]:
            assert backend.requeue(task_id)
            late.append(task_id)

    return requeue


@pytest.mark.parametrize("meanwhile", [another_fails, another_operator_requeues])
def test_a_requeue_on_a_filter_acts_once_on_each_failed_task_while_results_move(
    operator: Client,
    backend: ThreadmillTaskBackend,
    small_windows: None,
    monkeypatch: pytest.MonkeyPatch,
    meanwhile: Callable[[ThreadmillTaskBackend, list[str]], Callable[[Windows], None]],
) -> None:
    task_ids = [failed_task(backend) for _ in range(3 * WINDOW)]
    late: list[str] = []
    after_read(monkeypatch, 1, meanwhile(backend, late))

    messages = on_filter(operator, "requeue", "failed")

    requeued = [task_id for task_id in task_ids if task_id not in late]
    assert messages == [f"{len(requeued)} tasks requeued."]
    assert statuses(backend, requeued) == [TaskResultStatus.READY] * len(requeued)


def retried_in_an_hour(backend: ThreadmillTaskBackend, task_id: str) -> None:
    """Run ``task_id``'s attempt and fail it with a retry an hour from now: it is delayed."""
    lease = start(backend, task_id)
    retry = Finish(
        lease=lease,
        outcome=Outcome.RETRY,
        value=error_json(ValueError("flaky")),
        started_ms=now_ms(),
        finished_ms=now_ms(),
        retry_delay_ms=HOUR_MS,
    )
    assert backend.broker.finish(WORKER, [retry]) == []


def test_a_task_met_ready_then_delayed_is_cancelled_once(
    operator: Client, backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every state walks the READY list, then the delayed one: a task a worker ran and
    retried in between was in both, cancelled once and then reported "left alone: the task
    is FAILED now, not READY"."""
    task_id = add.enqueue(1, 1).id
    after_read(monkeypatch, 2, lambda _: retried_in_an_hour(backend, task_id))  # leases, READY

    messages = on_filter(operator, "cancel", "")

    assert messages == ["1 task cancelled."]
    assert statuses(backend, [task_id]) == [TaskResultStatus.FAILED]


def test_a_message_names_at_most_twenty_tasks_it_left_alone(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """It named every one: an action on a filter leaves up to 10,000 alone, 400 KB of ids in
    one message, kept in the session."""
    task_ids = [failed_task(backend) for _ in range(MAX_LISTED_IDS + 5)]
    backend.purge_finished("default")

    messages = post_action(
        operator,
        {"action": "requeue", "_selected_action": [f"default:{t}" for t in task_ids]},
    )

    assert messages[0] == "0 tasks requeued."
    [left_alone] = messages[1:]
    named = [task_id for task_id in task_ids if task_id in left_alone]
    assert named == task_ids[:MAX_LISTED_IDS]
    assert left_alone.startswith(f"{len(task_ids)} left alone: no such task any more")
    assert left_alone.endswith(f"{task_ids[MAX_LISTED_IDS - 1]} and 5 more.")
