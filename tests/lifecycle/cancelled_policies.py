"""A task whose retry policy raises ``asyncio.CancelledError``, a ``BaseException`` that is
neither ``SystemExit`` nor ``KeyboardInterrupt``: at module level, so ``load_task`` imports
it."""

import asyncio
from datetime import timedelta

from django_threadmill.retry import RetryContext
from django_threadmill.task import task


def asks_a_cancelled_client(context: RetryContext) -> timedelta | None:
    """Raise as a policy does whose async client (called through ``async_to_sync``) was
    cancelled."""
    raise asyncio.CancelledError


@task(retry=asks_a_cancelled_client)
def cancelled_policy() -> None:
    """Carry a policy that raises CancelledError."""
