"""An outbox key of another type leaves that queue's outbox out of a look at every outbox, with a
WARNING naming the key once per look; the other queues' outboxes drain (docs/lifecycle.md, Keys
of another type).

Before, the one pipeline that finds the outboxes holding entries failed on that key: the
reaper's drain and a worker's periodic look drained no queue's outbox while the key existed,
and ``reap_pass`` reported it as Redis having stopped answering.
"""

import logging

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker.reaper import reap_pass
from django_threadmill.worker.workflow_drainer import WorkflowDrainer
from django_threadmill.workflows import WorkflowResult, chain, step
from django_threadmill.workflows.advance import drain
from tests.backend_support import succeed
from tests.support import HandClock, wait_until

from .tasks import add, number

SKIPPED = "Workflow outbox skipped, its key holds another type"


def first_step_ended(backend: ThreadmillTaskBackend) -> WorkflowResult:
    """Enqueue a chain on ``default`` whose first step ended: its entry waits in the outbox."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    succeed(backend, flow.steps[0].task_id, 1)
    return flow


def damaged_emails_outbox(backend: ThreadmillTaskBackend) -> str:
    outbox = backend.broker.queue_keys("emails").outbox
    backend.broker.client.set(outbox, "x")
    return outbox


def skipped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(SKIPPED)]


def test_a_reap_pass_drains_the_other_queues_outboxes(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    flow = first_step_ended(backend)
    outbox = damaged_emails_outbox(backend)

    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        report = reap_pass(backend)

    assert report.unreachable is None
    assert report.advanced == 1
    assert backend.broker.record(flow.steps[1].task_id) is not None
    [warning] = skipped(caplog)
    assert warning == (
        f"{SKIPPED} (delete it, or give each project its own OPTIONS['key_prefix']); the other "
        f"outboxes are drained key={outbox} error=WRONGTYPE Operation against a key holding "
        "the wrong kind of value"
    )


def test_a_workers_look_at_every_outbox_drains_the_other_queues(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    flow = first_step_ended(backend)
    backend.broker.outbox_signal.take()  # left by another process: this one's look finds it
    damaged_emails_outbox(backend)
    crashed: list[bool] = []
    drainer = WorkflowDrainer(
        backend.broker,
        ("default", "emails"),
        lambda part: drain(backend, part),
        on_drained=lambda: None,
        on_crash=lambda: crashed.append(True),
        clock=HandClock(0.0),  # still: no look after the first
    )

    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        drainer.start()  # it looks at every outbox as it starts
        try:
            wait_until(
                lambda: backend.broker.record(flow.steps[1].task_id) is not None,
                "the next step of the workflow on default enqueued",
            )
        finally:
            drainer.stop()
            drainer.join()

    assert not crashed
    assert len(skipped(caplog)) == 1
