"""A propagator that raises while reading a task's stored trace context fails no task.

The project's propagator (``propagate.set_global_textmap``) was guarded where the enqueue
stores a context, not where the worker reads it back: its ``extract`` raising made the run
span raise before the task ran. The worker thread died (CRITICAL), the process was restarted,
and the task stayed RUNNING until its lease expired, to be failed as if its worker had crashed.
"""

import textwrap

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import add, async_add
from tests.observability.test_trace_context import TRACEPARENT, store_trace
from tests.support import Command, run_to_completion

READING = "reading the trace context stored with the task"

# A burst worker in this process (--processes 0) with the OpenTelemetry SDK's tracer provider
# and a propagator whose extract raises.
BROKEN_EXTRACT_WORKER = textwrap.dedent(
    """
    from django.core.management import execute_from_command_line
    from opentelemetry import propagate, trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    class BrokenExtract(TraceContextTextMapPropagator):
        def extract(self, carrier, context=None, getter=None):
            raise ValueError("propagator extract broke")

    trace.set_tracer_provider(TracerProvider())
    propagate.set_global_textmap(BrokenExtract())
    execute_from_command_line(["manage.py", "threadmill_worker", "--processes", "0", "--burst"])
    """
)


def test_tasks_run_and_succeed_when_the_propagator_raises_on_extract(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    results = [task.enqueue(1, 2) for task in (add, async_add)]
    for result in results:
        store_trace(redis_client, backend, result.id, f'{{"traceparent":"{TRACEPARENT}"}}')

    output = run_to_completion(Command(redis_url, key_prefix, code=BROKEN_EXTRACT_WORKER))

    assert "died" not in output
    assert [backend.get_result(r.id).status for r in results] == [TaskResultStatus.SUCCESSFUL] * 2
    assert output.count(f"OpenTelemetry raised while {READING}") == 2  # one per task
    assert "propagator extract broke" in output  # the traceback names the cause
