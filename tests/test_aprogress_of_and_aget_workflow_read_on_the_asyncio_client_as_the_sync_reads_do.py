"""``aprogress_of`` and ``aget_workflow``, the async twins of ``progress_of`` and ``get_workflow``:
the same value and the same errors, read on the asyncio client. There were none: the sync reads,
called from an ASGI view or an async task, held its event loop for each round trip.

Each fixture reads through the sync API before the test's loop runs; the test then reads the
same through the async one with the broker's sync client refused. The queue is sharded, so each
record lives in a part of it, where the sync reads find it.
"""

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, ProgressReport
from django_threadmill.compat import TaskResult, TaskResultDoesNotExist, TaskResultStatus
from django_threadmill.exceptions import PayloadError, WorkflowDoesNotExist
from django_threadmill.progress import Progress, aprogress_of, progress_of
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, aget_workflow, chain, get_workflow, step
from tests.progress.tasks import plain
from tests.workflows.tasks import add, number

SHARDS = 4
type Raised = tuple[type[Exception], str]  # an error's class and message
type Arguments = tuple[Any, ...]  # of a call, wrong types too


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": SHARDS}}


class SyncClientRefused:
    """Stands in for the broker's sync client: any use of it fails the test, naming it."""

    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f"an async read used the sync client (.{name})")


@contextmanager
def sync_client_refused(broker: Broker) -> Iterator[None]:
    """Refuse the broker's sync client inside the block (the fixtures' setup used it)."""
    broker.close()
    broker.__dict__["client"] = SyncClientRefused()
    try:
        yield
    finally:
        del broker.__dict__["client"]


def raised_by[**P](
    kind: type[Exception], says: str, call: Callable[P, object], *args: P.args, **kwargs: P.kwargs
) -> Raised:
    """Return the class and message of the error ``call(*args)`` raises: a ``kind`` that says
    ``says``."""
    with pytest.raises(kind, match=re.escape(says)) as raised:
        call(*args, **kwargs)
    return type(raised.value), str(raised.value)


def key_of(broker: Broker, task_id: str) -> str:
    key = broker.record_key(task_id)
    assert key is not None
    assert key != broker.queue_keys("default").record(task_id)  # in one of its shards
    return key


# Progress ----------------------------------------------------------------------------------


@pytest.fixture
def reported(broker: Broker) -> tuple[TaskResult, Progress]:
    """A task that reported 3 of 10, and the progress ``progress_of`` reads of it."""
    result = plain.enqueue()
    [reservation] = broker.acquire("default", SHARDS).reservations
    report = ProgressReport(lease=reservation.lease, done=3, total=10, note="row 3")
    assert broker.send_progress([report]) == 1
    progress = progress_of(result)
    assert progress is not None
    assert (progress.done, progress.total, progress.note, progress.percent) == (3, 10, "row 3", 30)
    return result, progress


async def test_aprogress_of_reads_what_progress_of_reads(
    broker: Broker, reported: tuple[TaskResult, Progress]
) -> None:
    result, progress = reported
    silent = await plain.aenqueue()

    with sync_client_refused(broker):
        assert await aprogress_of(result) == progress
        assert await aprogress_of(silent) is None


@pytest.fixture
def unreadable_progress(
    broker: Broker, redis_client: redis.Redis
) -> list[tuple[TaskResult, Raised]]:
    """Tasks whose progress cannot be read, each with what ``progress_of`` raises."""
    gone, damaged, undecodable = plain.enqueue(), plain.enqueue(), plain.enqueue()
    redis_client.delete(key_of(broker, gone.id))  # expired, or purged
    redis_client.delete(damaged_key := key_of(broker, damaged.id))
    redis_client.set(damaged_key, "not a hash")
    redis_client.hset(key_of(broker, undecodable.id), "progress_note", b"\xff")
    expected = [
        (gone, TaskResultDoesNotExist, gone.id),
        (damaged, PayloadError, f"its key {damaged_key!r} holds a string, not a hash"),
        (undecodable, PayloadError, "holds bytes that are not UTF-8"),
    ]
    return [(result, raised_by(kind, says, progress_of, result)) for result, kind, says in expected]


async def test_aprogress_of_raises_what_progress_of_raises(
    broker: Broker, unreadable_progress: list[tuple[TaskResult, Raised]]
) -> None:
    with sync_client_refused(broker):
        for result, raised in unreadable_progress:
            with pytest.raises(raised[0]) as found:
                await aprogress_of(result)
            assert (type(found.value), str(found.value)) == raised
        message = (
            "aprogress_of() takes a TaskResult, not a str. Pass the result enqueue() returned, "
            "or await the_task.aget_result(id) for an id."
        )
        with pytest.raises(TypeError, match=re.escape(message)):
            await aprogress_of(unreadable_progress[0][0].id)  # type: ignore[arg-type]


# Workflows ---------------------------------------------------------------------------------


def two_steps_run() -> WorkflowResult:
    flow = chain(step(number, 5), step(add, 1)).enqueue()
    assert drain() == 2
    return flow


@pytest.fixture
def read_back(backend: ThreadmillTaskBackend) -> list[WorkflowResult]:
    """A workflow that ran and one whose second step waits, as ``get_workflow`` reads them."""
    ran, waits = two_steps_run(), chain(step(number, 1), step(add, 1)).enqueue()
    found = [get_workflow(ran.id), get_workflow(waits.id, "default")]
    assert [flow.status for flow in found] == [TaskResultStatus.SUCCESSFUL, TaskResultStatus.READY]
    assert [result.return_value for result in found[0].results if result] == [5, 6]
    assert [s.state for s in found[1].steps] == ["READY", "WAITING"]
    return found


async def test_aget_workflow_reads_what_get_workflow_reads(
    broker: Broker, read_back: list[WorkflowResult]
) -> None:
    ran, waits = read_back

    with sync_client_refused(broker):
        assert await aget_workflow(ran.id) == ran
        assert await aget_workflow(waits.id, "default") == waits


@pytest.fixture
def damaged_steps(broker: Broker, redis_client: redis.Redis) -> list[WorkflowResult]:
    """Workflows with a step whose record key is not a hash, and one whose record holds bytes
    that are not UTF-8, as ``get_workflow`` reads them: that step DAMAGED, the other as it is."""
    step_damaged, step_undecodable = (two_steps_run() for _ in range(2))
    redis_client.delete(damaged_key := key_of(broker, step_damaged.steps[1].task_id))
    redis_client.set(damaged_key, "not a hash")
    redis_client.hset(key_of(broker, step_undecodable.steps[0].task_id), "result", b"\xff")
    found = [get_workflow(step_damaged.id), get_workflow(step_undecodable.id)]
    assert [[s.state for s in flow.steps] for flow in found] == [
        ["SUCCESSFUL", "DAMAGED"],
        ["DAMAGED", "SUCCESSFUL"],
    ]
    assert "holds a string, not a hash" in found[0].steps[1].unreadable
    assert "holds bytes that are not UTF-8" in found[1].steps[0].unreadable
    return found


async def test_aget_workflow_reads_a_damaged_step_as_get_workflow_does(
    broker: Broker, damaged_steps: list[WorkflowResult]
) -> None:
    with sync_client_refused(broker):
        for flow in damaged_steps:
            assert await aget_workflow(flow.id) == flow


@pytest.fixture
def refused_reads(broker: Broker, redis_client: redis.Redis) -> list[tuple[Arguments, Raised]]:
    """Arguments ``get_workflow`` raises for, each with what it raises."""
    plan_damaged = two_steps_run()
    redis_client.hset(broker.keyspace.workflow(plan_damaged.id), "p:1", "{not json")
    expected: list[tuple[Arguments, type[Exception], str]] = [
        ((plan_damaged.id,), PayloadError, f"Step 1 of workflow {plan_damaged.id!r} is missing"),
        (("nope",), WorkflowDoesNotExist, "has no workflow 'nope'"),
        (("caf\u00e9",), WorkflowDoesNotExist, "has no workflow 'caf\u00e9'"),
        ((7,), TypeError, "A workflow id is a str (WorkflowResult.id), not an int: 7."),
        ((plan_damaged.id, ["default"]), TypeError, "A backend is named by its alias in TASKS"),
    ]
    return [(args, raised_by(kind, says, get_workflow, *args)) for args, kind, says in expected]


async def test_aget_workflow_raises_what_get_workflow_raises(
    broker: Broker, refused_reads: list[tuple[Arguments, Raised]]
) -> None:
    with sync_client_refused(broker):
        for args, raised in refused_reads:
            with pytest.raises(raised[0]) as found:
                await aget_workflow(*args)
            assert (type(found.value), str(found.value)) == raised
