"""Close stale database connections around each task, as Django does around each request.

Django's ``close_old_connections`` honours ``CONN_MAX_AGE`` and drops broken connections. It
looks up every database alias in the thread's connection store, even in a thread that never
opened a connection: about 1 µs of the executor's 15 µs on an echo task. So it runs only where
a connection was opened: connections are per thread, and Django sends ``connection_created``
in the thread that connects.

An async task reaches the ORM through asgiref's ``sync_to_async`` (Django's async ORM calls
included), whose thread-sensitive calls all run in one thread outside the worker's own. After
async tasks, once a connection was ever opened in such a thread, its stale connections are
closed there, as Django's request handler does; in the background (``OrmThreadCloser``), since
that thread runs one call at a time and a task awaiting the close would wait out any other
task's slow call there. Every async task shares that thread's connection, so it is closed only
once none runs: while others do, only a broken one is dropped (one task's end closed it under
another's ``aiterator()`` between two chunks). The threads of the event loop's default executor
(``sync_to_async(thread_sensitive=False)``, ``asyncio.to_thread``) and the one its signal
receivers run in (worker/receivers_thread.py) close theirs after each call
(``ConnectionClosingExecutor``), as each call is a request of its own there.

A worker thread that ends closes what it opened, as a request thread's connections close with
its request; so does asgiref's thread when the event loop stops (``OrmThreadCloser.close_all``).

Inside ``connections_kept`` nothing is closed: the in-process drain (django_threadmill.testing)
runs tasks in a test's own thread, whose connection holds the test's transaction.
"""

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connections
from django.db.backends.signals import connection_created

from ..exceptions import TransactionLeftOpen

logger = logging.getLogger(__name__)


class _ThreadFlags(threading.local):
    """What this thread is and did; each thread starts from the class's defaults.

    Defaults on the class, not ``getattr(..., default)``: a missing attribute raises and
    catches AttributeError, about 1 µs, on every task of a thread that never connects.
    """

    worker = False  # runs sync tasks (mark_worker_thread)
    connected = False  # opened a database connection


_this_thread = _ThreadFlags()
_opened_outside_workers = threading.Event()  # set once a non-worker thread connects
# Inside connections_kept: how deep in atomic() blocks each connection was when the block began.
_kept: ContextVar[dict[str, int] | None] = ContextVar("threadmill_connections_kept", default=None)
# A worker process starts afresh: what its supervisor opened before forking is not its own.
os.register_at_fork(after_in_child=_opened_outside_workers.clear)


def mark_worker_thread() -> None:
    """Say the calling thread runs sync tasks: its connections are closed by it, per task."""
    _this_thread.worker = True


def _note_connected(sender: Any, **kwargs: Any) -> None:
    _this_thread.connected = True
    if not _this_thread.worker:
        _opened_outside_workers.set()


connection_created.connect(_note_connected, dispatch_uid="django_threadmill.worker.db_connections")


@contextmanager
def connections_kept() -> Iterator[None]:
    """Close no connection after the tasks run inside the block (and their async calls, which
    carry the context): whoever runs them owns the connections, as a test owns its
    transaction. Django's test client leaves them open around a request for the same reason.
    A task that leaves an ``atomic()`` open is rolled back to where the block began."""
    depths = {
        opened.alias: len(opened.atomic_blocks) for opened in connections.all(initialized_only=True)
    }
    token = _kept.set(depths)
    try:
        yield
    finally:
        _kept.reset(token)


def _closes_its_own() -> bool:
    """Whether this thread opened a connection and closing it is this code's to do (it is not
    kept for whoever runs the tasks)."""
    return _this_thread.connected and _kept.get() is None


def close_stale_connections() -> None:
    """Close this thread's connections that are too old or unusable; none opened, no work.

    A close that fails is logged, not raised: Django drops the connection either way, and the
    outcome of the task that just ran must still be written."""
    if _closes_its_own():
        try:
            close_old_connections()
        except Exception as exc:
            logger.warning("Closing stale database connections failed error=%r", exc)


def roll_back_open_transactions() -> list[str]:
    """Roll back every ``atomic()`` block a task left open; return the aliases. Left open, the
    transaction would hold its locks, and the next task's connection check would close the
    connection inside it, breaking the thread's database calls for good. A worker thread's
    connections are in no block between tasks; inside ``connections_kept`` (a drain) they are
    in the blocks they were in when it began (a test's transaction), which stay. Any other
    thread's are its caller's, and left alone."""
    kept = _kept.get()
    if kept is None and not (_this_thread.worker and _this_thread.connected):
        return []
    rolled_back = []
    for opened in connections.all(initialized_only=True):
        floor = 0 if kept is None else kept.get(opened.alias, 0)
        if len(opened.atomic_blocks) > floor:
            rolled_back.append(opened.alias)
            while len(opened.atomic_blocks) > floor:  # innermost first; an exception: roll back
                opened.atomic_blocks[-1].__exit__(TransactionLeftOpen, None, None)
    return rolled_back


def close_thread_connections() -> None:
    """Close every connection this thread opened: it is ending (retired by the pool, or the
    process stops), and a connection left to the garbage collector is dropped without a word
    to the database (PostgreSQL logs each as an unexpected EOF)."""
    if _closes_its_own():
        for opened in connections.all(initialized_only=True):
            opened.close()


def drop_broken_connections() -> None:
    """Close this thread's connections that no longer work, and only those: other async tasks
    are using them, one between two chunks of an ``aiterator()`` (its cursor), and a close for
    ``CONN_MAX_AGE`` would break their next call. Otherwise as Django's
    ``close_old_connections``: a connection an error left is checked, and with
    ``CONN_HEALTH_CHECKS`` the next use checks it first."""
    for opened in connections.all(initialized_only=True):
        if opened.connection is None:
            continue
        opened.health_check_done = False  # type: ignore[attr-defined]  # not in the stubs
        if opened.errors_occurred:
            if opened.is_usable():
                opened.errors_occurred = False
                opened.health_check_done = True  # type: ignore[attr-defined]
            else:
                opened.close()


class OrmThreadCloser:
    """Close the stale connections of the thread async ORM calls use after async tasks end,
    awaited by none of them.

    Awaited, the close waited its turn behind every call queued in that one thread: another
    task's slow query held up each task's outcome, its concurrency slot and its timeout (a
    two-second timeout was recorded at fifteen). One close waits at a time: it runs after every
    call queued before it, so it serves every task that ended meanwhile.

    That thread's connection is every async task's: it is closed for ``CONN_MAX_AGE`` only
    once no async task runs (then no call of one is queued before the close). While others
    run, only a broken connection is dropped; closed, it failed the call after another's,
    an ``aiterator()``'s next chunk ("the connection is closed").
    """

    def __init__(self) -> None:
        self._waiting: asyncio.Future[None] | None = None
        self._waiting_closes = False  # the waiting call is close_old_connections
        self._running = 0  # async tasks between task_began and after_task (the loop's thread)

    def task_began(self) -> None:
        """Count an async task in: its ORM calls share the connection (on the loop)."""
        self._running += 1

    def after_task(self) -> None:
        """Count the task out, and close that thread's stale connections soon (only broken
        ones while other async tasks run), if it ever connected (on the loop)."""
        self._running -= 1
        if not _opened_outside_workers.is_set() or _kept.get() is not None:
            return
        closes = self._running == 0
        waiting = self._waiting is not None and not self._waiting.done()
        if waiting and (self._waiting_closes or not closes):
            return
        call = close_old_connections if closes else drop_broken_connections
        self._waiting_closes = closes
        self._waiting = asyncio.ensure_future(sync_to_async(call, thread_sensitive=True)())
        self._waiting.add_done_callback(_log_failure)

    async def close_all(self, timeout_s: float) -> None:
        """Close every connection that thread opened, as a worker thread does as it ends: the
        process is stopping. Wait at most ``timeout_s``: a cancelled task's query may still
        hold the thread."""
        if not _opened_outside_workers.is_set() or _kept.get() is not None:
            return
        try:
            await asyncio.wait_for(
                sync_to_async(close_thread_connections, thread_sensitive=True)(), timeout_s
            )
        except TimeoutError:
            logger.warning(
                "Database connections of async tasks left open: a call still held their "
                "thread after %gs",
                timeout_s,
            )
        except Exception as exc:
            logger.warning("Closing database connections failed error=%r", exc)


class ConnectionClosingExecutor(ThreadPoolExecutor):
    """A thread pool whose threads close their stale connections after each call.

    Left to a plain pool, the connections ORM code opened in its threads stayed open for the
    life of the process, past ``CONN_MAX_AGE``, and one the database had dropped (a restart,
    a failover) failed every later call in its thread: nothing there ever ran Django's
    ``close_old_connections`` (docs/worker.md, The ORM from async tasks).
    """

    def submit[**P, T](self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return super().submit(_then_close_stale, fn, *args, **kwargs)


def _then_close_stale[**P, T](fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    try:
        return fn(*args, **kwargs)
    finally:
        close_stale_connections()


def _log_failure(done: "asyncio.Future[None]") -> None:
    if not done.cancelled() and (error := done.exception()) is not None:
        logger.warning("Closing stale database connections failed error=%r", error)
