"""The enqueue side of django-vtasks: the backend's enqueue_many for bulk (harness/client.py)."""

from ..django_client import enqueue_one, staged_task


def enqueue_bulk(count: int, value: str, sleep_ms: int = 0, is_async: bool = False) -> None:
    """Enqueue ``count`` echo tasks (naps of ``sleep_ms`` if set, async if ``is_async``) with
    ValkeyTaskBackend.enqueue_many (one LPUSH)."""
    task, args = staged_task(value, sleep_ms, is_async)
    task.get_backend().enqueue_many([(task, args, {}) for _ in range(count)])


__all__ = ["enqueue_bulk", "enqueue_one"]
