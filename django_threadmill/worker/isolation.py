"""What a sync task runs in: a fresh copy of its worker thread's context, one per task.

A worker thread ran its tasks in its own context, so what a task set in it stayed set for the
thread's next task: a ``ContextVar`` (a request id, a tenant, structlog's bound values), or the
language ``translation.activate`` chose. Each attempt now runs in a copy of the thread's
context made as it starts (worker/threads.py). No task code runs in the thread's own, so every
copy starts clean; what the worker sets for the attempt (its run span) is set inside the copy,
where the task sees it. A copy and its ``run`` cost about 0.1 µs a task. Async tasks need none
of this: each runs in an asyncio task of its own, whose context is a copy already
(docs/worker.md, What a task starts from).

Django keeps its cache backends per thread in asgiref's ``Local``, a context variable: made
inside a task, a backend would end with the task, and a Redis or memcached cache connect again
for every task (about 0.5 ms each). ``keep_thread_caches`` makes them in the thread's own
context first, so they last as long as the thread, as they do in a web server's threads.
"""

from django.core.cache import caches


def keep_thread_caches() -> None:
    """Make each of Django's cache backends in the calling thread's own context, where every
    task's copy finds it, so the thread's tasks share one, connections and all."""
    for alias in caches:
        try:
            caches[alias]
        except Exception:  # a broken CACHES entry: the task that uses it raises the error
            continue
