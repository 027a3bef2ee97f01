"""A task's context variables are its own: the next task on the same worker thread, or on the
event loop, starts from the worker's clean context, not from what the task before it left.

A sync task ran in its worker thread's context, so what it set there stayed for every later
task of that thread: a request id or tenant in a ``ContextVar`` (structlog's contextvars), the
language ``translation.activate`` chose. What the worker sets per task stays the task's: its run
span is current inside it, parented by no span a task before it left attached; and what the
worker keeps per thread (Django's cache backends) stays the thread's.

Each test runs the real ``threadmill_worker`` command in a subprocess, with the OpenTelemetry
SDK; the tasks are at module level so the worker imports them.
"""

import textwrap
import threading
from contextvars import ContextVar
from typing import Any

from django.core.cache import caches
from django.utils import translation
from opentelemetry import context as otel_context
from opentelemetry import trace

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task
from tests.support import Command, run_to_completion

tenant: ContextVar[str | None] = ContextVar("tenant", default=None)

# A burst worker in this process (--processes 0) with the SDK's tracer provider, one thread
# and one async task at a time: each task runs after the one before it ended, in its place.
TRACED_WORKER = textwrap.dedent(
    """
    from django.core.management import execute_from_command_line
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())
    execute_from_command_line([
        "manage.py", "threadmill_worker", "--processes", "0", "--threads", "1",
        "--async-concurrency", "1", "--burst",
    ])
    """
)


def _seen() -> dict[str, Any]:
    """What the running task sees of the context it was given; the run span is the worker's."""
    run_span = trace.get_current_span()
    parent = getattr(run_span, "parent", None)
    return {
        "tenant": tenant.get(),
        "language": translation.get_language(),
        "span": getattr(run_span, "name", None),
        "span_parent": None if parent is None else parent.span_id,
        "thread": threading.current_thread().name,
    }


def _leave_behind(tenant_id: str) -> None:
    """Set what a careless task leaves set: its tenant, a language, a span never detached."""
    tenant.set(tenant_id)
    translation.activate("fr")
    left = trace.get_tracer("careless").start_span("left attached")
    otel_context.attach(trace.set_span_in_context(left))


@task
def leaves_its_context(tenant_id: str) -> dict[str, Any]:
    seen = _seen()
    # The thread's Django cache, kept from task to task (its connections with it).
    cache = caches["default"]
    seen["cache_kept"] = getattr(cache, "threadmill_mark", None)
    cache.threadmill_mark = tenant_id  # type: ignore[attr-defined]
    _leave_behind(tenant_id)
    return seen


@task
async def aleaves_its_context(tenant_id: str) -> dict[str, Any]:
    seen = _seen()
    _leave_behind(tenant_id)
    return seen


def _run_in_turn(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, leaving: Any
) -> list[TaskResult]:
    """Run two of ``leaving`` in a traced worker, one after the other; return their results."""
    enqueued = [leaving.enqueue("tenant-a"), leaving.enqueue("tenant-b")]
    run_to_completion(Command(redis_url, key_prefix, code=TRACED_WORKER))
    results = [backend.get_result(result.id) for result in enqueued]
    assert [r.status for r in results] == [TaskResultStatus.SUCCESSFUL] * 2, results[0].errors
    return results


def test_a_sync_task_does_not_see_what_the_one_before_it_on_its_thread_set(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    first, second = (
        r.return_value for r in _run_in_turn(backend, redis_url, key_prefix, leaves_its_context)
    )

    assert second["thread"] == first["thread"]
    assert first["thread"].startswith("threadmill-worker-")
    assert second["tenant"] is first["tenant"] is None
    assert second["language"] == first["language"] == "en-us"
    # The worker's run span is the task's current span, parented by nothing left behind.
    assert second["span"] == first["span"] == f"run {leaves_its_context.module_path}"
    assert second["span_parent"] is first["span_parent"] is None
    # What the worker keeps per thread is kept: one Django cache object, not one per task.
    assert second["cache_kept"] == "tenant-a"


def test_an_async_task_does_not_see_what_the_one_before_it_on_the_loop_set(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    first, second = (
        r.return_value for r in _run_in_turn(backend, redis_url, key_prefix, aleaves_its_context)
    )

    assert second["thread"] == first["thread"] == "threadmill-event-loop"
    assert second["tenant"] is first["tenant"] is None
    assert second["language"] == first["language"] == "en-us"
    assert second["span"] == first["span"] == f"run {aleaves_its_context.module_path}"
    assert second["span_parent"] is first["span_parent"] is None
