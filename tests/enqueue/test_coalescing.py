"""Concurrent enqueues share round trips, and each caller still gets its own outcome."""

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task_enqueued
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from testproject.example.tasks import echo, send_welcome
from tests.conftest import tasks_setting
from tests.servers.redis_server import free_port
from tests.support import script_calls, wait_until

NOT_JSON = "Arguments of task 'testproject.example.tasks.echo' cannot be stored as JSON"


async def gather(*calls: object) -> list[TaskResult | BaseException]:
    return await asyncio.gather(*calls, return_exceptions=True)  # type: ignore[arg-type]


def test_one_loops_concurrent_calls_are_one_script_call(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    echo.enqueue("loads the script")  # else the first call counts twice (NOSCRIPT, then again)
    before = script_calls(redis_client)
    outcomes = asyncio.run(gather(*(echo.aenqueue(n) for n in range(200))))
    # The first call finds the line free; the other 199 join while it is being sent.
    assert script_calls(redis_client) - before == 1
    assert [backend.get_result(r.id).args for r in outcomes] == [[n] for n in range(200)]


def test_a_big_batch_goes_as_several_calls_at_once(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("django_threadmill.enqueue.coalesce.CHUNK_TASKS", 3)
    echo.enqueue("loads the script")
    before = script_calls(redis_client)
    outcomes = asyncio.run(gather(*(echo.aenqueue(n) for n in range(7))))
    assert script_calls(redis_client) - before == 3  # 3 + 3 + 1
    assert [backend.get_result(r.id).args for r in outcomes] == [[n] for n in range(7)]


def test_a_lone_call_is_one_script_call(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    echo.enqueue("registers the queue")
    before = script_calls(redis_client)
    echo.enqueue("alone")
    asyncio.run(echo.aenqueue("alone, async"))
    assert script_calls(redis_client) - before == 2


def test_a_non_json_argument_fails_only_its_caller(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    echo.enqueue("loads the script")  # else a first call on a fresh Redis is sent twice (NOSCRIPT)
    before = script_calls(redis_client)
    first, bad, last = asyncio.run(
        gather(echo.aenqueue(1), echo.aenqueue({1, 2}), echo.aenqueue(3))
    )
    assert isinstance(bad, TypeError)
    assert str(bad).startswith(NOT_JSON)
    assert script_calls(redis_client) - before == 1
    assert [backend.get_result(r.id).args for r in (first, last)] == [[1], [3]]


def test_a_failing_receiver_fails_only_the_caller_it_failed_for(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    def receiver(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        if task_result.args == [2]:
            raise RuntimeError("receiver refused task 2")

    task_enqueued.connect(receiver)
    try:
        outcomes = asyncio.run(gather(*(echo.aenqueue(n) for n in range(4))))
    finally:
        task_enqueued.disconnect(receiver)
    assert str(outcomes.pop(2)) == "receiver refused task 2"
    assert [backend.get_result(r.id).args for r in outcomes] == [[0], [1], [3]]
    # Task 2 is stored all the same: the signal goes out after the write, as with enqueue.
    assert redis_client.zcard(backend.broker.queue_keys("default").ready) == 4


def test_threads_each_get_their_own_outcome(backend: ThreadmillTaskBackend) -> None:
    start = threading.Barrier(16)

    def enqueue(n: int) -> TaskResult | BaseException:
        start.wait()
        try:
            return echo.enqueue({n} if n == 7 else n)
        except TypeError as exc:
            return exc

    with ThreadPoolExecutor(16, thread_name_prefix="test-coalesce") as pool:
        outcomes = list(pool.map(enqueue, range(16)))
    assert str(outcomes.pop(7)).startswith(NOT_JSON)
    results = [r for r in outcomes if isinstance(r, TaskResult)]
    assert [backend.get_result(r.id).args for r in results] == [[n] for n in range(16) if n != 7]


@pytest.mark.parametrize("tasks_options", [{"max_connections": 1}])
def test_threads_that_arrive_during_a_call_share_the_next_one(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    echo.enqueue("registers the queue")
    before = script_calls(redis_client)
    pool = backend.broker.client.connection_pool
    held = pool.get_connection()  # the first caller's call waits for the only connection
    line = backend.pipeline.enqueuer._threads._line
    with ThreadPoolExecutor(9, thread_name_prefix="test-coalesce") as threads:
        futures = [threads.submit(echo.enqueue, n) for n in range(9)]
        wait_until(lambda: len(line._waiting) == 8, "eight callers waiting behind the first")
        pool.release(held)
        results = [future.result() for future in futures]
    assert script_calls(redis_client) - before == 2  # the first call, then the eight together
    assert {backend.get_result(r.id).status for r in results} == {TaskResultStatus.READY}


def test_a_queue_refused_by_redis_fails_only_its_callers(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    echo.enqueue("registers the queue")
    redis_client.set(backend.broker.queue_keys("emails").ready, "not a zset")
    outcomes = asyncio.run(
        gather(echo.aenqueue(1), send_welcome.aenqueue("a@example.com"), echo.aenqueue(2))
    )
    first, refused, last = outcomes
    assert isinstance(refused, BrokerUnavailable)
    assert "holds a value of the wrong kind" in str(refused)
    assert [backend.get_result(r.id).args for r in (first, last)] == [[1], [2]]


def test_a_redis_error_on_a_batch_reaches_every_caller(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    echo.enqueue("registers the queue")
    redis_client.config_set("maxmemory", 1)  # every enqueue is refused: OOM
    try:
        outcomes = asyncio.run(gather(*(echo.aenqueue(n) for n in range(5))))
    finally:
        redis_client.config_set("maxmemory", 0)
    assert all(isinstance(o, BrokerUnavailable) for o in outcomes)
    assert all("is out of memory" in str(o) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 5  # each caller raises its own exception object


def test_an_unreachable_redis_reaches_every_caller(key_prefix: str) -> None:
    with override_settings(TASKS=tasks_setting(f"redis://127.0.0.1:{free_port()}/0", key_prefix)):
        outcomes = asyncio.run(gather(*(echo.aenqueue(n) for n in range(5))))
    assert all(isinstance(o, BrokerUnavailable) for o in outcomes)
    assert all("is unreachable" in str(o) and "nothing was written" in str(o) for o in outcomes)


def test_a_cancelled_caller_does_not_cancel_the_batch(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    async def cancel_one() -> list[TaskResult | BaseException]:
        calls = [asyncio.create_task(echo.aenqueue(n)) for n in range(5)]
        await asyncio.sleep(0)  # yield one loop turn (no timing): each call joins the line
        calls[2].cancel()
        return await gather(*calls)

    outcomes = asyncio.run(cancel_one())
    assert isinstance(outcomes[2], asyncio.CancelledError)
    assert [backend.get_result(r.id).args for r in outcomes if isinstance(r, TaskResult)] == [
        [0],
        [1],
        [3],
        [4],
    ]
    # The cancelled caller's task travelled with the others: a dropped request can't undo it.
    assert redis_client.zcard(backend.broker.queue_keys("default").ready) == 5


@pytest.mark.parametrize("tasks_options", [{"max_connections": 1}])
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_finds_the_line_free(backend: ThreadmillTaskBackend) -> None:
    echo.enqueue("registers the queue")
    pool = backend.broker.client.connection_pool
    held = pool.get_connection()  # a thread of the parent is sending when the fork happens
    line = backend.pipeline.enqueuer._threads._line  # no public view of the line
    with ThreadPoolExecutor(1, thread_name_prefix="test-coalesce") as threads:
        sending = threads.submit(echo.enqueue, "in flight in the parent")
        wait_until(lambda: line._busy, "the parent's call holding the line")
        pid = os.fork()
        if pid == 0:  # the child: its enqueue must not wait for the parent's sender
            os._exit(0 if echo.enqueue("from the child").status == TaskResultStatus.READY else 1)
        pool.release(held)
        sending.result()
    assert os.waitpid(pid, 0)[1] == 0


@pytest.mark.parametrize("tasks_options", [{"max_connections": 1}])
def test_a_stopped_flusher_fails_its_callers_and_frees_the_line(
    backend: ThreadmillTaskBackend,
) -> None:
    async def stop_the_flusher() -> tuple[list[TaskResult | BaseException], TaskResult]:
        client, _ = backend.broker._async_client()  # no public view of the loop's pool
        held = await client.connection_pool.get_connection()  # the flusher waits for it
        calls = [asyncio.create_task(echo.aenqueue(n)) for n in range(3)]
        await asyncio.sleep(0)  # yield one loop turn (no timing): every call joins the line
        [flusher] = [t for t in asyncio.all_tasks() if t.get_name() == "threadmill-enqueue"]
        flusher.cancel()
        outcomes = await gather(*calls)
        await client.connection_pool.release(held)
        return outcomes, await echo.aenqueue("after")

    outcomes, after = asyncio.run(stop_the_flusher())
    errors = [o for o in outcomes if isinstance(o, MaybeApplied) and "interrupted" in str(o)]
    # Each names its own task, which its caller never got back.
    assert [len(error.task_ids) for error in errors] == [1, 1, 1]
    assert len({error.task_ids[0] for error in errors}) == 3
    assert all(f"check get_result({e.task_ids[0]!r}) before" in str(e) for e in errors)
    assert backend.get_result(after.id).status == TaskResultStatus.READY
