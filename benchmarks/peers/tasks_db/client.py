"""The enqueue side of django-tasks-db: bulk inserts in one transaction (harness/client.py)."""

from django.db import transaction

from .. import django_client
from ..django_client import enqueue_one, pickup


def enqueue_bulk(count: int, value: str) -> None:
    """One transaction around the inserts, as a bulk job would do it."""
    with transaction.atomic():
        django_client.enqueue_bulk(count, value)


__all__ = ["enqueue_bulk", "enqueue_one", "pickup"]
