"""The enqueue side of django-tasks-redis (see benchmarks/client.py)."""

from ..django_client import enqueue_bulk, enqueue_one, pickup

__all__ = ["enqueue_bulk", "enqueue_one", "pickup"]
