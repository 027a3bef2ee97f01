"""The enqueue side of django-threadmill: enqueue_many for bulk (see benchmarks/client.py)."""

from ..django_client import enqueue_one, pickup
from ..django_tasks import echo


def enqueue_bulk(count: int, value: str) -> None:
    """Enqueue ``count`` echo tasks with ThreadmillTaskBackend.enqueue_many."""
    echo.get_backend().enqueue_many(echo, [((value,), {}) for _ in range(count)])


__all__ = ["enqueue_bulk", "enqueue_one", "pickup"]
