"""A burst of enqueues from one process: python -m benchmarks.harness.enqueue_burst ...

  async N coalesced|plain       N concurrent ``aenqueue`` calls gathered in one event loop
  threads T N coalesced|plain   T threads, each making N ``enqueue`` calls one after the other

``coalesced`` is the product's path. ``plain`` sends one call per task, as enqueue did before
coalescing: the same validation and encoding, one script call and one signal per task, through
the same waiting pool. Prints one JSON object: {"seconds": ..., "tasks": ..., "errors": ...}.
"""

import argparse
import asyncio
import json
import threading
import time
from collections.abc import Callable

import django

PAYLOAD = "x" * 100  # the drain benchmark's echo argument


def plain_calls() -> tuple[Callable[[str], None], Callable[[str], object]]:
    """Return one-call-per-task ``enqueue`` and ``aenqueue`` twins of the backend's own."""
    from django_threadmill.compat import task_enqueued
    from django_threadmill.enqueue.prepare import prepare

    from ..peers.django_tasks import echo

    backend = echo.get_backend()
    broker = backend.broker

    def enqueue(value: str) -> None:
        new, result = prepare(echo, (value,), {}, broker=broker)
        broker.enqueue(echo.queue_name, [new])
        task_enqueued.send(type(backend), task_result=result)

    async def aenqueue(value: str) -> None:
        new, result = prepare(echo, (value,), {}, broker=broker)
        await broker.aenqueue(echo.queue_name, [new])
        await task_enqueued.asend(type(backend), task_result=result)

    return enqueue, aenqueue


def product_calls() -> tuple[Callable[[str], None], Callable[[str], object]]:
    from ..peers.django_tasks import echo

    return echo.enqueue, echo.aenqueue


def async_burst(count: int, aenqueue: Callable[[str], object]) -> int:
    """Gather ``count`` calls in one event loop; return how many raised."""

    async def burst() -> list[object]:
        calls = [aenqueue(PAYLOAD) for _ in range(count)]
        return await asyncio.gather(*calls, return_exceptions=True)  # type: ignore[arg-type]

    return sum(isinstance(outcome, BaseException) for outcome in asyncio.run(burst()))


def thread_burst(threads: int, calls: int, enqueue: Callable[[str], None]) -> int:
    """Run ``threads`` threads of ``calls`` calls each, released together; return the errors."""
    start = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def run() -> None:
        start.wait()
        for _ in range(calls):
            try:
                enqueue(PAYLOAD)
            except Exception as exc:
                errors.append(exc)

    pool = [threading.Thread(target=run, name=f"bench-enqueuer-{n}") for n in range(threads)]
    for thread in pool:
        thread.start()
    start.wait()
    for thread in pool:
        thread.join()
    return len(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("style", choices=["async", "threads"])
    parser.add_argument("numbers", type=int, nargs="+", help="N, or T N for threads")
    parser.add_argument("variant", choices=["coalesced", "plain"])
    options = parser.parse_args()
    django.setup()
    enqueue, aenqueue = plain_calls() if options.variant == "plain" else product_calls()
    enqueue("warm-up: connect and load the script")
    started = time.perf_counter()
    if options.style == "async":
        [count] = options.numbers
        tasks, errors = count, async_burst(count, aenqueue)
    else:
        threads, calls = options.numbers
        tasks, errors = threads * calls, thread_burst(threads, calls, enqueue)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "tasks": tasks, "errors": errors}))


if __name__ == "__main__":
    main()
