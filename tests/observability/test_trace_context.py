"""A stored trace context that is not ours runs its task without a link, in a real worker.

The propagator takes text headers only: a ``traceparent`` stored as a number (another producer,
a hand-written record) raised TypeError while the run span opened, before the task ran. The
worker thread died (CRITICAL), the process was restarted, and the task stayed RUNNING until its
lease expired, to be failed as if its worker had crashed.
"""

import textwrap

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.observability import tracing
from testproject.example.tasks import add, async_add
from tests.support import Command, run_to_completion

# A burst worker in this process (--processes 0) with the OpenTelemetry SDK's tracer provider.
TRACED_WORKER = textwrap.dedent(
    """
    from django.core.management import execute_from_command_line
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())
    execute_from_command_line(["manage.py", "threadmill_worker", "--processes", "0", "--burst"])
    """
)
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
NOT_OURS = [
    '{"traceparent":5}',
    '{"traceparent":[5]}',
    f'{{"traceparent":"{TRACEPARENT}","tracestate":7}}',
]


def store_trace(
    redis_client: redis.Redis, backend: ThreadmillTaskBackend, task_id: str, trace: str
) -> None:
    """Put ``trace`` in the stored payload of ``task_id``, where enqueue puts a span's context."""
    key = backend.broker.record_key(task_id)
    assert key is not None
    payload = redis_client.hget(key, "payload")
    redis_client.hset(
        key, "payload", payload.replace(',"priority":', f',"trace":{trace},"priority":')
    )


def test_tasks_whose_trace_context_is_not_text_run_and_succeed(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    results = [task.enqueue(1, 2) for task in (add, async_add) for _ in NOT_OURS]
    for result, trace in zip(results, NOT_OURS * 2, strict=True):
        store_trace(redis_client, backend, result.id, trace)

    output = run_to_completion(Command(redis_url, key_prefix, code=TRACED_WORKER))

    assert "died" not in output
    assert [backend.get_result(r.id).status for r in results] == [TaskResultStatus.SUCCESSFUL] * 6


@pytest.mark.parametrize("trace", [*NOT_OURS, '{"traceparent":{"a":"b"}}', "[1]", "7"])
def test_only_a_text_traceparent_is_linked_to(trace: str) -> None:
    """The run span of a context that is not text has no link; a text traceparent beside a
    tracestate that is not text still gives one."""
    payload = f'{{"path":"{add.module_path}","args":[],"kwargs":{{}},"trace":{trace}}}'
    assert len(tracing._links(payload)) == (1 if TRACEPARENT in trace else 0)


def test_a_payload_nested_too_deeply_links_to_nothing() -> None:
    """The executor then fails the task with PayloadError; the span must not raise first."""
    assert tracing._links('{"trace":' + "[" * 100_000 + "]" * 100_000 + "}") == []
