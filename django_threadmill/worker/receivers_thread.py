"""The thread the event loop's signal receivers run in: one of their own, apart from the ORM's.

Django's ``asend_robust`` runs sync receivers through asgiref's thread-sensitive
``sync_to_async``, which on the lane's loop is the one thread every async task's ORM calls
share, one call at a time. A task whose query was still running at ``--task-timeout`` held
there the ``task_finished`` of its own timeout (Django's log receiver hears every failure): its
outcome waited for the query, for good if it never ended, and every other async task's
failure with it (docs/worker.md, The ORM from async tasks). Here they run in a thread of their
own, one call at a time as before, which closes the connections they open after each call
(ConnectionClosingExecutor).

A drain (django_threadmill.testing) is unaffected: under ``async_to_sync`` asgiref runs them in
the calling thread, which comes before this choice.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from asgiref.sync import SyncToAsync, ThreadSensitiveContext

from .db_connections import ConnectionClosingExecutor

# asgiref's own per-context executor table: what ThreadSensitiveContext(executor=...) fills
# (asgiref 3.13); set here, as asgiref 3.10 has no such argument. Its thread starts at the
# first send: a supervisor never makes one, so no fork copies it.
_receivers = ThreadSensitiveContext()
SyncToAsync.context_to_thread_executor[_receivers] = ConnectionClosingExecutor(
    max_workers=1, thread_name_prefix="threadmill-receivers"
)


@contextmanager
def receivers_thread() -> Iterator[None]:
    """Run the thread-sensitive calls made in the block (a signal's sync receivers) in the
    receivers' thread."""
    token = SyncToAsync.thread_sensitive_context.set(_receivers)
    try:
        yield
    finally:
        SyncToAsync.thread_sensitive_context.reset(token)
