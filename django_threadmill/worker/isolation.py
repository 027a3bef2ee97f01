"""What a task runs in: a fresh copy of its thread's context, one per task, and the cache
backends its thread keeps.

A worker thread ran its tasks in its own context, so what a task set in it stayed set for the
thread's next task: a ``ContextVar`` (a request id, a tenant, structlog's bound values), or the
language ``translation.activate`` chose. Each attempt now runs in a copy of the thread's
context made as it starts (worker/threads.py). No task code runs in the thread's own, so every
copy starts clean; what the worker sets for the attempt (its run span) is set inside the copy,
where the task sees it. A copy and its ``run`` cost about 0.1 µs a task. Async tasks each run
in an asyncio task of their own, made from a copy of the event loop thread's own context
(worker/event_loop.py), whichever thread woke the loop (docs/worker.md, What a task starts
from).

Django keeps its cache backends per thread in asgiref's ``Local``, a context variable: made
inside a task, a backend would end with the task, and a Redis or memcached cache connect again
for every task (about 0.5 ms each). ``keep_thread_caches`` makes them in the thread's own
context first, so they last as long as the thread, as they do in a web server's threads.
``keep_loop_caches`` does so for the event loop's thread, for the backends that threads may
share: its tasks reach their backend from asgiref's sync thread too (``cache.aget`` is a
``sync_to_async`` call), so tasks sharing one use it from two threads at once.
"""

from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache

# Backends one instance of which two threads may use at once: Django's Redis cache (redis-py's
# connection pool is thread-safe). Django's memcached clients are not; the other built-in
# backends connect to nothing, so a backend per task costs them nothing to speak of.
SHARED_BY_THREADS: tuple[type[BaseCache], ...] = (RedisCache,)


def keep_thread_caches() -> None:
    """Make each of Django's cache backends in the calling thread's own context, where every
    task's copy finds it, so the thread's tasks share one, connections and all."""
    for alias in caches:
        _made(alias)


def keep_loop_caches() -> None:
    """Make, in the event loop thread's own context, the cache backends its tasks may share
    (``SHARED_BY_THREADS``), connections and all; any other is made by each task that uses it,
    as a request of an ASGI server makes its own."""
    for alias in caches:
        made = _made(alias)
        if made is not None and not isinstance(made, SHARED_BY_THREADS):
            del caches[alias]


def _made(alias: str) -> BaseCache | None:
    """Make (or find) the calling context's backend for ``alias``; None if its entry is
    broken: the task that uses it raises the error."""
    try:
        return caches[alias]
    except Exception:
        return None
