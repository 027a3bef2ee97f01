"""The enqueue side of django-threadmill: enqueue_many for bulk (harness/client.py)."""

from ..django_client import enqueue_one, pickup
from ..django_tasks import echo, nap


def enqueue_bulk(count: int, value: str, sleep_ms: int = 0) -> None:
    """Enqueue ``count`` echo tasks (naps of ``sleep_ms`` if set) with enqueue_many."""
    task, args = (nap, (value, sleep_ms / 1000)) if sleep_ms else (echo, (value,))
    task.get_backend().enqueue_many(task, [(args, {}) for _ in range(count)])


__all__ = ["enqueue_bulk", "enqueue_one", "pickup"]
