"""The enqueue side of huey (see benchmarks/harness/client.py)."""

from .tasks import echo


def enqueue_one(value: str) -> None:
    echo(value)


def enqueue_bulk(count: int, value: str) -> None:
    """huey has no bulk enqueue: one call per task."""
    for _ in range(count):
        echo(value)
