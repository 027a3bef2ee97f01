"""The enqueue side of django-tasks-redis (see benchmarks/harness/client.py)."""

from ..django_client import enqueue_bulk, enqueue_one, pickup

__all__ = ["enqueue_bulk", "enqueue_one", "pickup"]
