"""aenqueue calls a sync thread waits for (``async_to_sync``) batched with an event loop's own:
every caller gets its result and its task_enqueued, whichever caller started the flusher."""

import asyncio
import inspect
from collections.abc import Awaitable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import ThreadSensitiveContext, async_to_sync, sync_to_async

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Enqueued, NewTask
from django_threadmill.compat import TaskResult
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo

WAIT_S = 30  # a hang fails the test instead of the run

type Groups = Mapping[str, Sequence[NewTask]]
type Outcomes = list[Enqueued | BrokerUnavailable]


def sent_after(
    monkeypatch: pytest.MonkeyPatch, backend: ThreadmillTaskBackend, gates: list[asyncio.Event]
) -> asyncio.Event:
    """Make the n-th batch the event loop sends wait for ``gates[n]`` (those past the list go at
    once); return an event set as the first batch is about to go."""
    broker = backend.broker
    send = broker.aenqueue_groups
    first_sent = asyncio.Event()
    batches = iter(gates)

    async def held(groups: Groups) -> Outcomes:
        first_sent.set()
        gate = next(batches, None)
        if gate is not None:
            await gate.wait()
        return await send(groups)

    monkeypatch.setattr(broker, "aenqueue_groups", held)
    return first_sent


async def aenqueue_from_a_sync_thread(value: str) -> TaskResult:
    """A thread-sensitive sync call reaching aenqueue through async_to_sync (a sync view)."""
    return await sync_to_async(lambda: async_to_sync(echo.aenqueue)(value))()


def joined(backend: ThreadmillTaskBackend, calls: int) -> asyncio.Event:
    """Return an event set once ``calls`` more aenqueue calls joined the running loop's line."""
    enqueuer = backend.pipeline.enqueuer
    aenqueue = enqueuer.aenqueue
    done = asyncio.Event()
    count = 0

    def counting(queue: str, task: NewTask, result: TaskResult) -> Awaitable[str | None]:
        nonlocal count
        waited = aenqueue(queue, task, result)
        count += 1
        if count == calls:
            done.set()
        return waited

    enqueuer.aenqueue = counting  # type: ignore[method-assign]
    return done


def test_a_sync_thread_waiting_in_a_batch_is_not_left_waiting_for_its_own_announcement(
    backend: ThreadmillTaskBackend,
    monkeypatch: pytest.MonkeyPatch,
    enqueued: list[tuple[type, TaskResult]],
) -> None:
    # The flusher, started by a coroutine, hopped each batch's task_enqueued to the sync
    # thread of its context: the very thread that waited in async_to_sync for a call of that
    # batch. Neither ever went on (nor did anything else on that thread).
    # A request's own sync thread, as Django's ASGI handler makes it; given and shut down here
    # where asgiref takes one (its own, shut down without waiting, outlived the test), made by
    # asgiref where it does not (3.10).
    sync_thread = ThreadPoolExecutor(max_workers=1)
    takes_one = "executor" in inspect.signature(ThreadSensitiveContext).parameters
    given = {"executor": sync_thread} if takes_one else {}

    async def main() -> list[TaskResult]:
        async with ThreadSensitiveContext(**given):
            second_joined = asyncio.Event()
            first_sent = sent_after(monkeypatch, backend, [second_joined])
            line = joined(backend, 2)
            own = asyncio.create_task(echo.aenqueue("coroutine"))
            await first_sent.wait()
            waited = asyncio.create_task(aenqueue_from_a_sync_thread("sync thread"))
            await line.wait()
            second_joined.set()
            return await asyncio.wait_for(asyncio.gather(own, waited), WAIT_S)

    results = asyncio.run(main())
    sync_thread.shutdown()
    assert [result.args for result in results] == [["coroutine"], ["sync thread"]]
    assert sorted(result.id for _, result in enqueued) == sorted(result.id for result in results)


def test_a_batch_after_the_flusher_starters_sync_thread_returned_is_announced(
    backend: ThreadmillTaskBackend,
    monkeypatch: pytest.MonkeyPatch,
    enqueued: list[tuple[type, TaskResult]],
) -> None:
    # A call from a sync thread started the flusher, which kept sending the batches that came
    # meanwhile once that call returned: their hop went to that thread's executor, closed by
    # then, and each caller got RuntimeError for a task that was stored.
    async def main() -> tuple[TaskResult, TaskResult]:
        second_joined, first_returned = asyncio.Event(), asyncio.Event()
        first_sent = sent_after(monkeypatch, backend, [second_joined, first_returned])
        first = asyncio.create_task(aenqueue_from_a_sync_thread("sync thread"))
        await first_sent.wait()
        line = joined(backend, 1)
        second = asyncio.create_task(echo.aenqueue("coroutine"))
        await line.wait()
        second_joined.set()
        returned = await asyncio.wait_for(first, WAIT_S)
        first_returned.set()
        return returned, await asyncio.wait_for(second, WAIT_S)

    results = asyncio.run(main())
    assert [result.args for result in results] == [["sync thread"], ["coroutine"]]
    assert [result.id for _, result in enqueued] == [result.id for result in results]
    assert [backend.get_result(result.id).args for result in results] == [
        ["sync thread"],
        ["coroutine"],
    ]
