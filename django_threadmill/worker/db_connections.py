"""Close stale database connections before each task, as Django does around each request.

Django's ``close_old_connections`` honours ``CONN_MAX_AGE`` and drops broken connections. It
looks up every database alias in the thread's connection store, even in a thread that never
opened a connection: about 1 µs of the executor's 15 µs on an echo task. So it runs
only in a thread that has opened one: connections are per thread, and Django sends
``connection_created`` in the thread that connects.
"""

import threading
from typing import Any

from django.db import close_old_connections
from django.db.backends.signals import connection_created

_this_thread = threading.local()


def _note_connected(sender: Any, **kwargs: Any) -> None:
    _this_thread.connected = True


connection_created.connect(_note_connected, dispatch_uid="django_threadmill.worker.db_connections")


def close_stale_connections() -> None:
    """Close this thread's connections that are too old or unusable; none opened, no work."""
    if getattr(_this_thread, "connected", False):
        close_old_connections()
