"""A step whose inputs together pass ``max_payload_bytes`` fails its workflow without the
drainer reading them (docs/workflows.md, Semantics: Values).

The drainer read every input's value in one reply and decoded them all, only to find the
step's payload too large to enqueue: a group of 10,000 steps returning 1 MiB each made a
worker read and decode 10 GB for the step after it, and the outbox entry, left behind by the
process the kernel killed, did the same to the next worker that drained it.
"""

from collections.abc import Sequence

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, group, step

from .tasks import length, number, text_of

MAX_PAYLOAD_BYTES = 2_000
MEMBERS = 20
VALUE_CHARS = 500  # each member's; together five times MAX_PAYLOAD_BYTES


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"max_payload_bytes": MAX_PAYLOAD_BYTES}


def test_inputs_past_the_payload_limit_fail_the_step_unread(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = chain(
        step(number, 1),
        group(*[step(text_of, VALUE_CHARS) for _ in range(MEMBERS)]),
        step(length),
    ).enqueue()
    read = backend.broker.workflow_values
    chars_read: list[int] = []

    def counted(workflow_id: str, names: Sequence[str]) -> list[str | None]:
        """Read as the broker does; count the characters of the steps' values read."""
        values = read(workflow_id, names)
        named = zip(names, values, strict=True)
        chars_read.append(sum(len(value or "") for name, value in named if name.startswith("v:")))
        return values

    monkeypatch.setattr(backend.broker, "workflow_values", counted)

    drain()

    flow.refresh()
    assert [s.state for s in flow.steps] == ["SUCCESSFUL"] * (1 + MEMBERS) + ["FAILED"]
    stored = MEMBERS * (VALUE_CHARS + 2)  # each value's JSON: a string in its quotes
    assert flow.why == (
        f"step {1 + MEMBERS} failed: not enqueued: Task 'tests.workflows.tasks.length' payload "
        f"is above max_payload_bytes={MAX_PAYLOAD_BYTES}: the values of the {MEMBERS} steps it "
        f"takes are {stored} bytes. Store large data elsewhere (a file or a model) and pass "
        "its key, or raise OPTIONS['max_payload_bytes']."
    )
    assert max(chars_read) < MAX_PAYLOAD_BYTES, chars_read
