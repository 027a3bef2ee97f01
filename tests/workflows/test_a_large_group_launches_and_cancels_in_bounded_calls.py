"""Launching and cancelling a group costs calls that do not grow with each member.

A launch read the whole workflow back (every step's record) to build what ``enqueue()``
returns, and a cancel read every record twice and sent one cancel.lua call per step: a group
of 30,000 members took seconds of client time to launch and more to cancel. A launch now
returns what it stored, and a cancel reads the records once and cancels its steps in calls of
at most ``CANCEL_BATCH``; a drainer stores a large group in calls of at most ``STORE_BATCH``
per queue, so no one call holds Redis for long, and a launch each queue's first steps in one,
atomic (docs/workflows.md, What it costs).

Counted from INFO commandstats, which counts the commands scripts run too.
"""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.broker.types import NewTask
from django_threadmill.compat import TaskResult, TaskResultStatus, task_enqueued
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, get_workflow, group, step
from tests.support import command_calls

from .tasks import add, collect, number


def launch_group(members: int) -> WorkflowResult:
    """Enqueue a group of ``members`` steps on two queues, and a callback."""
    return group(
        *(step(number.using(queue_name=("default", "emails")[n % 2]), n) for n in range(members)),
        then=step(collect),
    ).enqueue()


def counted[T](client: redis.Redis, call: Callable[[], T]) -> tuple[T, dict[str, int]]:
    """Run ``call``; return its answer and the commands Redis ran for it."""
    client.config_resetstat()
    answer = call()
    return answer, command_calls(client)


def test_a_launch_returns_what_it_stored_without_reading_any_step_back(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    launch_group(1)  # loads the scripts and registers the queues
    small, few = counted(redis_client, lambda: launch_group(10))
    flow, many = counted(redis_client, lambda: launch_group(300))

    assert "hgetall" not in many  # no step's record, nor the workflow's hash, is read back
    assert many["evalsha"] == few["evalsha"]
    assert flow.status == small.status == TaskResultStatus.READY
    assert [s.state for s in flow.steps] == ["READY"] * 300 + ["WAITING"]
    read_back = get_workflow(flow.id)
    assert [(s.task_id, s.state, s.task_status) for s in flow.steps] == [
        (s.task_id, s.state, s.task_status) for s in read_back.steps
    ]
    for given, stored in zip(flow.results[:300], read_back.results, strict=False):
        assert given is not None
        assert stored is not None
        assert (given.id, given.args, given.status) == (stored.id, stored.args, stored.status)


def test_a_cancel_reads_the_steps_once_and_cancels_them_in_a_few_calls(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    launch_group(1).cancel()  # loads the scripts
    small, large = launch_group(10), launch_group(300)
    _, few = counted(redis_client, lambda: small.cancel("too big"))
    _, many = counted(redis_client, lambda: large.cancel("too big"))

    assert many["evalsha"] == few["evalsha"]  # one cancel.lua call per queue, advance, the rest
    assert many["hgetall"] == 300  # each step's record once (the workflow's hash: HMGET twice)
    why = "Cancelled before it ran: its workflow was cancelled: too big"
    for result in large.results[:300]:
        assert result is not None
        assert result.status == TaskResultStatus.FAILED
        assert result.errors[-1].traceback.strip().endswith(why)
    assert large.steps[-1].not_run == "cancelled: too big"


@pytest.fixture
def stored_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, int]]:
    """Per ``enqueue_groups`` call (one enqueue.lua call per queue), the steps sent per queue;
    batches of 100 steps a store and a cancel call."""
    monkeypatch.setattr("django_threadmill.workflows.launch.STORE_BATCH", 100)
    monkeypatch.setattr("django_threadmill.broker.lifecycle.CANCEL_BATCH", 100)
    calls: list[dict[str, int]] = []
    enqueue_groups = Broker.enqueue_groups

    def counting(broker: Broker, groups: dict[str, list[NewTask]]) -> list[object]:
        calls.append({queue: len(tasks) for queue, tasks in groups.items()})
        return enqueue_groups(broker, groups)

    monkeypatch.setattr(Broker, "enqueue_groups", counting)
    return calls


def test_a_launch_stores_each_queues_first_steps_in_one_call_and_cancels_in_batches(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, stored_calls: list[dict[str, int]]
) -> None:
    """A launch killed between two calls would leave its workflow open for good, the rest of
    its first steps never stored (docs/workflows.md, A launch that was interrupted)."""
    launch_group(1).cancel()  # loads the scripts and registers the queues
    stored_calls.clear()
    announced: list[TaskResult] = []

    def heard(sender: object, task_result: TaskResult, **kwargs: object) -> None:
        announced.append(task_result)

    task_enqueued.connect(heard, weak=False)
    try:
        flow, launched = counted(redis_client, lambda: launch_group(500))
    finally:
        task_enqueued.disconnect(heard)
    _, cancelled = counted(redis_client, lambda: flow.cancel())

    assert stored_calls == [{"default": 250, "emails": 250}]
    # create_workflow.lua, an enqueue.lua call per queue, then mark.lua
    assert launched["evalsha"] == 1 + 2 + 1
    # No MULTI/EXEC, which redis-py's cluster client refuses (6.0, 6.1) or mishandles after a
    # connection error (to 7.1).
    assert "multi" not in launched
    assert sorted(r.id for r in announced) == sorted(s.task_id for s in flow.steps[:500])
    assert cancelled["evalsha"] == 1 + 2 * 3  # advance.lua, then three cancel.lua per queue
    assert [s.state for s in flow.steps] == ["FAILED"] * 500 + ["NOT_RUN"]


def test_a_drainer_stores_a_large_group_in_batches(
    backend: ThreadmillTaskBackend, stored_calls: list[dict[str, int]]
) -> None:
    """Its outbox entry stays until every step is stored: a drainer killed between two calls
    leaves the rest to the next look."""
    members = (step(add.using(queue_name=("default", "emails")[n % 2]), n) for n in range(500))
    flow = chain(step(number, 0), group(*members, then=step(collect))).enqueue()

    drain(queues=["default", "emails"], max_tasks=1000)

    assert stored_calls == [
        {"default": 1},  # the launch's first step
        {"default": 100, "emails": 100},
        {"default": 100, "emails": 100},
        {"default": 50, "emails": 50},
        {"default": 1},  # the callback
    ]
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert flow.results[-1] is not None
    assert flow.results[-1].return_value == list(range(500))


def test_steps_a_drainer_stored_before_a_later_call_failed_are_announced_once(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored and marked, they are not due again: announced when the later call fails, or
    never (the next look stores the rest and announces those)."""
    monkeypatch.setattr("django_threadmill.workflows.launch.STORE_BATCH", 100)
    enqueue_groups, calls = Broker.enqueue_groups, []

    def failing_once(broker: Broker, groups: dict[str, list[NewTask]]) -> list[object]:
        calls.append(groups)
        if len(calls) == 3:  # the group's second batch
            raise BrokerUnavailable("Redis went away (a test)")
        return enqueue_groups(broker, groups)

    monkeypatch.setattr(Broker, "enqueue_groups", failing_once)
    announced: list[str] = []

    def heard(sender: object, task_result: TaskResult, **kwargs: object) -> None:
        announced.append(task_result.id)

    members = (step(add, n) for n in range(300))
    flow = chain(step(number, 0), group(*members, then=step(collect))).enqueue()
    task_enqueued.connect(heard, weak=False)
    try:
        drain(max_tasks=1000)  # the entry whose advance failed stays in the outbox
        drain(max_tasks=1000)  # and is advanced again
    finally:
        task_enqueued.disconnect(heard)

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert sorted(announced) == sorted(s.task_id for s in flow.steps[1:])


def test_a_drainer_stores_no_more_batches_once_the_workflow_ended(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel between two batches: the rest would be stored only to be cancelled."""
    monkeypatch.setattr("django_threadmill.workflows.launch.STORE_BATCH", 100)
    enqueue_groups, calls = Broker.enqueue_groups, []

    def cancelled_after_the_first_batch(
        broker: Broker, groups: dict[str, list[NewTask]]
    ) -> list[object]:
        calls.append(groups)
        stored = enqueue_groups(broker, groups)
        if len(calls) == 2:  # the group's first batch
            get_workflow(flow.id).cancel("enough")
        return stored

    monkeypatch.setattr(Broker, "enqueue_groups", cancelled_after_the_first_batch)
    flow = chain(step(number, 0), group(*(step(add, n) for n in range(300)))).enqueue()

    drain(max_tasks=1000)

    assert len(calls) == 2  # the launch's first step, the group's first batch
    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert [s.state for s in flow.steps[1:]] == ["FAILED"] * 100 + ["NOT_RUN"] * 200
