"""A workflow copies why it ended into every step it leaves unrun (``x:i``) and into every
waiting step it cancels: a cancel's reason, or why a step could not be enqueued, is cut as a
failed step's error is (docs/workflows.md, Semantics). A reason of 100,000 characters given to
``cancel()`` was stored whole 2N+1 times: 40 MB for a workflow of 200 steps."""

import json

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.results import MAX_ERROR_TEXT_CHARS
from django_threadmill.workflows import chain, group, step
from django_threadmill.workflows.advance import advance_from
from tests.backend_support import succeed

from .tasks import add, number

LONG = "x" * 100_000
CUT_NOTE = 64  # the note cut_to puts where it cut, and the words before the reason


def test_a_long_cancel_reason_is_cut_in_every_copy(backend: ThreadmillTaskBackend) -> None:
    members = 100
    flow = chain(group(*(step(number, n) for n in range(members))), step(add, 1)).enqueue()

    assert flow.cancel(LONG)

    fields = backend.broker.workflow_fields(flow.id)
    assert len(fields["why"]) < MAX_ERROR_TEXT_CHARS + CUT_NOTE
    assert fields["why"].startswith("cancelled: xxx")
    assert len(fields[f"x:{members}"]) < MAX_ERROR_TEXT_CHARS + CUT_NOTE
    for result in flow.results[:members]:
        assert result is not None
        assert len(result.errors[-1].traceback) < MAX_ERROR_TEXT_CHARS + 1000


def test_why_a_step_was_not_enqueued_is_cut_in_every_copy(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = chain(step(number, 1), group(step(add, 1), step(add, 2)), step(add, 3)).enqueue()
    client, key = backend.broker.client, backend.broker.keyspace.workflow(flow.id)
    damaged = json.loads(client.hget(key, "p:1"))
    damaged["priority"] = LONG  # a hash damaged by hand: its message quotes what it holds
    client.hset(key, "p:1", json.dumps(damaged))
    succeed(backend, flow.steps[0].task_id, 1)

    advance_from(backend, flow.steps[0].task_id)

    fields = backend.broker.workflow_fields(flow.id)
    assert fields["status"] == "failed"
    assert "not enqueued: " in fields["why"]
    for field in ("why", "x:2", "x:3"):
        assert len(fields[field]) < MAX_ERROR_TEXT_CHARS + CUT_NOTE
