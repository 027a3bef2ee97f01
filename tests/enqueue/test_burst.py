"""Bursts of enqueues from one process: none refused, every task READY exactly once."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult
from testproject.example.tasks import echo

ASYNC_CALLS = 10_000
THREADS = 64
CALLS_PER_THREAD = 500

# Default settings, and the smallest pool the issue asks to survive the same burst.
pytestmark = pytest.mark.parametrize("tasks_options", [{}, {"max_connections": 4}], ids=str)


def assert_ready_exactly_once(
    redis_client: redis.Redis, backend: ThreadmillTaskBackend, results: list[TaskResult]
) -> None:
    ids = [result.id for result in results]
    assert len(set(ids)) == len(ids)
    keys = backend.broker.queue_keys("default")
    assert redis_client.zcard(keys.ready) == len(ids)
    assert None not in redis_client.zmscore(keys.ready, ids)
    with redis_client.pipeline(transaction=False) as pipe:
        for task_id in ids:
            pipe.hget(keys.record(task_id), "state")
        assert set(pipe.execute()) == {"ready"}


def test_async_burst_from_one_loop(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    async def burst() -> list[TaskResult | BaseException]:
        calls = (echo.aenqueue(n) for n in range(ASYNC_CALLS))
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(burst())
    errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert errors == []
    results = [outcome for outcome in outcomes if isinstance(outcome, TaskResult)]
    assert sorted(result.args[0] for result in results) == list(range(ASYNC_CALLS))
    assert_ready_exactly_once(redis_client, backend, results)


def test_thread_burst_from_one_process(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def enqueue_many_times(thread_no: int) -> list[TaskResult]:
        start.wait()
        results = []
        for n in range(CALLS_PER_THREAD):
            try:
                results.append(echo.enqueue(thread_no, n))
            except Exception as exc:
                errors.append(exc)
        return results

    with ThreadPoolExecutor(THREADS, thread_name_prefix="test-burst") as pool:
        per_thread = list(pool.map(enqueue_many_times, range(THREADS)))
    assert errors == []
    results = [result for results in per_thread for result in results]
    assert len(results) == THREADS * CALLS_PER_THREAD
    assert_ready_exactly_once(redis_client, backend, results)
