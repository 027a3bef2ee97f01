"""The enqueue side of django-vtasks: the backend's enqueue_many for bulk (harness/client.py)."""

from ..django_client import enqueue_one
from ..django_tasks import echo


def enqueue_bulk(count: int, value: str) -> None:
    """Enqueue ``count`` echo tasks with ValkeyTaskBackend.enqueue_many (one LPUSH)."""
    echo.get_backend().enqueue_many([(echo, (value,), {}) for _ in range(count)])


__all__ = ["enqueue_bulk", "enqueue_one"]
