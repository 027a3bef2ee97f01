"""The enqueue side of dramatiq (see benchmarks/harness/client.py)."""

import time

from .tasks import anap, echo, nap, stamp


def enqueue_one(value: str) -> None:
    echo.send(value)


def enqueue_bulk(count: int, value: str, sleep_ms: int = 0, is_async: bool = False) -> None:
    """dramatiq has no bulk send: one send per message (naps of ``sleep_ms`` if set, the async
    actor if ``is_async``)."""
    if not sleep_ms:
        for _ in range(count):
            echo.send(value)
        return
    actor, seconds = (anap if is_async else nap), sleep_ms / 1000
    for _ in range(count):
        actor.send(value, seconds)


def pickup() -> float:
    """Send one stamp task, wait for its result; return seconds from send to start."""
    sent_at = time.time()
    message = stamp.send()
    started_at = float(message.get_result(block=True, timeout=10_000))
    return started_at - sent_at
