"""A step whose record was damaged by hand between its end and its workflow's advance (its
``result`` deleted, or its ``state`` written or deleted) fails its workflow, naming the key and
the fix as ``get_result`` does (docs/workflows.md, Semantics): without its result the next
step was handed None, as if the step had returned it, and a state written by hand was taken
for a requeue, which left the workflow open for good."""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.workflows import chain, step
from django_threadmill.workflows.advance import Advance, advance_from
from tests.backend_support import succeed

from .tasks import add, number


@pytest.mark.parametrize(
    ("field", "value", "held"),
    [
        ("result", None, "the state successful without a result field"),
        ("state", "BANANA", "the state 'BANANA', not one of ready"),
        ("state", None, "no state field, not one of ready"),
    ],
)
def test_the_workflow_fails_and_the_next_step_is_not_run(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    field: str,
    value: str | None,
    held: str,
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    first = flow.steps[0].task_id
    succeed(backend, first, 1)
    key = backend.broker.record_key(first)
    assert key is not None
    if value is None:
        redis_client.hdel(key, field)
    else:
        redis_client.hset(key, field, value)

    assert advance_from(backend, first) is Advance.ADVANCED

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert flow.why.startswith(f"step 0 failed: Task {first!r} cannot be read: its record")
    assert held in flow.why
    assert f"redis-cli HGETALL {key!r}" in flow.why
    assert flow.steps[1].state == "NOT_RUN"
    assert flow.steps[1].not_run == flow.why
