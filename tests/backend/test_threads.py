"""One broker per process: backends of every thread share it; concurrent enqueues all land."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResult, task_backends
from testproject.example.tasks import echo

CALLS = 200


def broker_seen_by_a_new_thread() -> Broker:
    found: list[Broker] = []
    thread = threading.Thread(
        target=lambda: found.append(task_backends["default"].broker), name="test-other-thread"
    )
    thread.start()
    thread.join()
    return found[0]


def test_threads_share_one_broker(backend: ThreadmillTaskBackend) -> None:
    assert broker_seen_by_a_new_thread() is backend.broker


def test_concurrent_enqueues_from_threads(backend: ThreadmillTaskBackend) -> None:
    with ThreadPoolExecutor(8, thread_name_prefix="test-enqueuer") as pool:
        results = list(pool.map(echo.enqueue, range(CALLS)))
    assert len({r.id for r in results}) == CALLS
    acquired = backend.broker.acquire("default", CALLS + 1).reservations
    assert sorted(r.lease.task_id for r in acquired) == sorted(r.id for r in results)


async def enqueue_all(count: int) -> list[TaskResult]:
    return list(await asyncio.gather(*(echo.aenqueue(n) for n in range(count))))


def test_concurrent_aenqueues_in_one_loop(backend: ThreadmillTaskBackend) -> None:
    results = asyncio.run(enqueue_all(CALLS))
    assert sorted(backend.get_result(r.id).args[0] for r in results) == list(range(CALLS))
