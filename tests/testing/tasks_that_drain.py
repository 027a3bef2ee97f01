"""Tasks that call drain() themselves, as a task the drain runs (tests of that refusal)."""

from asgiref.sync import sync_to_async

from django_threadmill.compat import task
from django_threadmill.testing import drain

from .tasks import record


@task
def enqueues_two_then_drains() -> int:
    """Enqueue two tasks, then try to run them at once, as a test might mock a wait for them."""
    record.enqueue("child 1")
    record.enqueue("child 2")
    return drain()


@task
def enqueues_itself_then_drains() -> int:
    """Enqueue itself, then drain: each drain would run the next one inside it, deeper."""
    enqueues_itself_then_drains.enqueue()
    return drain()


@task
async def adrains_through_sync_to_async() -> int:
    """Drain the way drain()'s refusal inside an event loop says to: in the sync thread."""
    record.enqueue("child of async")
    return await sync_to_async(drain)()


@task
async def adrains_on_its_loop() -> int:
    """Call drain() on the event loop the drain runs it on."""
    record.enqueue("child of async")
    return drain()
