"""Enqueue one task inside a request span and run it, with the OpenTelemetry SDK in memory.

Run as ``python -m tests.observability.trace_probe`` (the test's environment names its Redis):
it prints one JSON line per finished span. A process of its own, because OpenTelemetry's
tracer provider is set once per process and must not reach the other tests.
"""

import asyncio
import json

import django
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from django_threadmill.compat import BaseTaskBackend


def spans_in_memory() -> InMemorySpanExporter:
    """Set this process's tracer provider to keep every finished span in memory, then set
    Django up; return what holds the spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    django.setup()
    return exporter


def main() -> None:
    exporter = spans_in_memory()

    from django_threadmill.codec.times import now_ms
    from django_threadmill.compat import task_backends
    from django_threadmill.worker.executor import Executor
    from testproject.example.tasks import add, echo, fail, send_welcome, slow

    backend = task_backends["default"]
    with trace.get_tracer("probe").start_as_current_span("request"):
        add.enqueue(1, 2)
        fail.enqueue("on purpose")
        # Django's own aenqueue calls enqueue(task=..., args=..., kwargs=...) in a thread.
        asyncio.run(BaseTaskBackend.aenqueue(backend, send_welcome, ("ada@example.com",), {}))
        backend.enqueue_many(task=slow, calls=[((0,), {})])
    backend.enqueue_many(echo, [((n,), {}) for n in range(2)])
    executor = Executor("probe-worker", "default", type(backend))
    for reservation in backend.broker.acquire("default", 10).reservations:
        backend.broker.finish("probe-worker", [executor.run(reservation, now_ms())])
    # The slow task's thread loses its claim, as when the watchdog timed it out meanwhile.
    [slow_run] = backend.broker.acquire("reports", 1).reservations
    assert executor.run(slow_run, now_ms(), claim=lambda: False) is None
    for span in sorted(exporter.get_finished_spans(), key=lambda span: span.start_time or 0):
        print(
            json.dumps(
                {
                    "name": span.name,
                    "kind": span.kind.name,
                    "trace_id": span.context.trace_id,
                    "span_id": span.context.span_id,
                    "parent_id": span.parent.span_id if span.parent else None,
                    "links": [link.context.span_id for link in span.links],
                    "status": span.status.status_code.name,
                    "attributes": dict(span.attributes or {}),
                }
            )
        )


if __name__ == "__main__":
    main()
