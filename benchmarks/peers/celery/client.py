"""The enqueue side of celery (see benchmarks/harness/client.py)."""

from .app import echo


def enqueue_one(value: str) -> None:
    echo.delay(value)


def enqueue_bulk(count: int, value: str) -> None:
    """One apply_async per task: celery's group would add a result set to the run."""
    for _ in range(count):
        echo.delay(value)
