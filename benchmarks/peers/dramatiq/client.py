"""The enqueue side of dramatiq (see benchmarks/harness/client.py)."""

import time

from .tasks import echo, stamp


def enqueue_one(value: str) -> None:
    echo.send(value)


def enqueue_bulk(count: int, value: str) -> None:
    """dramatiq has no bulk send: one send per message."""
    for _ in range(count):
        echo.send(value)


def pickup() -> float:
    """Send one stamp task, wait for its result; return seconds from send to start."""
    sent_at = time.time()
    message = stamp.send()
    started_at = float(message.get_result(block=True, timeout=10_000))
    return started_at - sent_at
