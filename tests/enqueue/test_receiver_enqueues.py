"""A task_enqueued receiver that enqueues a follow-up while an event loop announces a task.

The loop's flusher once awaited the announcement before it freed the line: the receiver (run
on that loop by asgiref) joined the busy line and waited for a batch the flusher never sent,
since the flusher waited for the receiver. Every later aenqueue on that loop hung too.
"""

import asyncio
import textwrap
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task_enqueued
from testproject.example.tasks import echo
from tests.enqueue.follow_ups import ORIGINAL, follow_up, spawn
from tests.support import Command, run_to_completion

GUARD_S = 30  # a hang fails the test instead of the run; no test comes near it

type Receiver = Callable[..., Awaitable[None] | None]


@contextmanager
def connected(receiver: Receiver) -> Iterator[None]:
    task_enqueued.connect(receiver)
    try:
        yield
    finally:
        task_enqueued.disconnect(receiver)


def stored(backend: ThreadmillTaskBackend) -> list[TaskResult]:
    """The result of every task stored in the default queue."""
    prefix = backend.broker.queue_keys("default").record_prefix
    keys = backend.broker.client.scan_iter(f"{prefix}*")
    return [backend.get_result(key.removeprefix(prefix)) for key in keys]


def reprs(values: Iterable[object]) -> list[str]:
    return sorted(map(repr, values))


def sync_follow_up(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
    """A sync receiver reaching aenqueue through async_to_sync, back on the caller's loop."""
    async_to_sync(follow_up)(sender, task_result)


@pytest.fixture(params=[follow_up, sync_follow_up], ids=["async", "async_to_sync"])
def receiver(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    with connected(request.param):
        yield request.param


@pytest.fixture
def announced() -> Iterator[list[list[Any]]]:
    """The arguments of each task announced, in order; connected before the receiver under
    test, and sync, so it hears each task before that receiver runs (Signal.send)."""
    seen: list[list[Any]] = []

    def record(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(task_result.args)

    with connected(record):
        yield seen


def test_a_receiver_that_enqueues_a_follow_up_does_not_hang_the_loop(
    backend: ThreadmillTaskBackend, announced: list[list[Any]], receiver: Receiver
) -> None:
    async def enqueue_twice() -> list[TaskResult]:
        first = await asyncio.wait_for(echo.aenqueue(ORIGINAL), GUARD_S)
        after = await asyncio.wait_for(echo.aenqueue("after"), GUARD_S)  # the loop goes on
        return [first, after]

    first, after = asyncio.run(enqueue_twice())
    expected = [[ORIGINAL], [["follow-up", first.id]], ["after"]]
    assert announced == expected  # the follow-up within its receiver, before aenqueue returned
    assert reprs(result.args for result in stored(backend)) == reprs(expected)
    assert {backend.get_result(r.id).status for r in (first, after)} == {TaskResultStatus.READY}


def test_a_follow_up_sent_in_another_callers_batch_is_announced(
    backend: ThreadmillTaskBackend, announced: list[list[Any]]
) -> None:
    """The follow-up joins a batch another caller of the loop started: announced from that
    caller's context, its hop would queue behind the thread that waits for the receiver."""
    follow_up_may_go = asyncio.Event()
    other_caller_may_go = asyncio.Event()

    async def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        if task_result.args == [ORIGINAL]:
            other_caller_may_go.set()
            await follow_up_may_go.wait()
            await echo.aenqueue(["follow-up", task_result.id])

    async def two_callers() -> TaskResult:
        first = asyncio.ensure_future(echo.aenqueue(ORIGINAL))
        await other_caller_may_go.wait()
        other = asyncio.ensure_future(echo.aenqueue("other"))
        await asyncio.sleep(0)  # yield one loop turn (no timing): the other caller joins
        follow_up_may_go.set()
        await asyncio.wait_for(other, GUARD_S)
        return await asyncio.wait_for(first, GUARD_S)

    with connected(receiver):
        first = asyncio.run(two_callers())
    expected = [[ORIGINAL], ["other"], [["follow-up", first.id]]]
    assert reprs(announced) == reprs(expected)
    assert reprs(result.args for result in stored(backend)) == reprs(expected)


def test_a_follow_up_the_receiver_leaves_running_is_announced(
    backend: ThreadmillTaskBackend, announced: list[list[Any]]
) -> None:
    """Started and left running, the follow-up outlives the receiver: the thread that sent to
    the receiver waits no more, and asgiref refuses a hop to it."""
    left_running: list[asyncio.Future[TaskResult]] = []

    async def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        if task_result.args == [ORIGINAL]:
            left_running.append(asyncio.ensure_future(echo.aenqueue(["follow-up", task_result.id])))

    async def enqueue_then_await_the_follow_up() -> list[TaskResult]:
        first = await asyncio.wait_for(echo.aenqueue(ORIGINAL), GUARD_S)
        return [first, *await asyncio.wait_for(asyncio.gather(*left_running), GUARD_S)]

    with connected(receiver):
        first, follow = asyncio.run(enqueue_then_await_the_follow_up())
    expected = [[ORIGINAL], [["follow-up", first.id]]]
    assert announced == expected
    assert reprs(result.args for result in stored(backend)) == reprs(expected)
    assert backend.get_result(follow.id).status == TaskResultStatus.READY


# A worker in this process (--processes 0), with follow_ups' receiver connected.
CONNECT_THEN_WORK = textwrap.dedent(
    """
    import django
    from django.core.management import execute_from_command_line

    django.setup()
    from tests.enqueue import follow_ups

    follow_ups.connect()
    execute_from_command_line(["manage.py", "threadmill_worker", "--processes", "0", "--burst"])
    """
)


def test_an_async_task_that_enqueues_with_such_a_receiver_succeeds_in_a_worker(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """Eight at once on the worker's event loop: their enqueues share batches there."""
    spawned = [spawn.enqueue() for _ in range(8)]
    run_to_completion(Command(redis_url, key_prefix, code=CONNECT_THEN_WORK))
    ran = [backend.get_result(result.id) for result in spawned]
    assert [result.status for result in ran] == [TaskResultStatus.SUCCESSFUL] * 8
    echoes = [result for result in stored(backend) if result.task.name == "echo"]
    follow_ups = [["follow-up", result.return_value] for result in ran]
    assert reprs(result.return_value for result in echoes) == reprs([*[ORIGINAL] * 8, *follow_ups])
    assert {result.status for result in echoes} == {TaskResultStatus.SUCCESSFUL}
