"""A step requeued before its failure was drained, and ending again while a drainer held the
failure's entry, still advances its workflow, and its record expires after ``result_ttl``.

An outbox entry is the step's id alone. Two drainers read the failure's entry (every worker
drains its queues' whole outbox); both found the step waiting again (the admin's retry), so
neither advanced the workflow. The first took the entry out; the step then ran and succeeded,
pushing its new entry; the second's take-out (``LREM 1``) removed that new entry instead, and
gave the record its expiry: the success was never recorded in the workflow, whose next step
was never enqueued and which read RUNNING for good.
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.workflows import advance, chain, step
from django_threadmill.workflows.advance import drain
from tests.backend_support import fail, succeed
from tests.support import run_to_completion, worker

from .tasks import add, boom


def test_a_step_ending_again_while_a_drainer_held_its_old_entry_advances_its_workflow(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = chain(step(boom, 0), step(add, 1)).enqueue()
    first = flow.steps[0].task_id
    fail(backend, first, ValueError("down"))
    assert backend.requeue(first)  # the admin's retry, before any drain
    advance_from, interleaved = advance.advance_from, []

    def held_while_another_drains_and_the_step_ends(
        backend: ThreadmillTaskBackend, task_id: str, part: str | None = None
    ) -> object:
        advanced = advance_from(backend, task_id, part)  # finds the step waiting again
        if not interleaved:
            interleaved.append(task_id)
            assert drain(backend, "default") == 0  # another drainer takes the entry out
            succeed(backend, first, 1)  # the requeued attempt succeeds: its own entry
        return advanced

    monkeypatch.setattr(advance, "advance_from", held_while_another_drains_and_the_step_ends)
    drain(backend, "default")
    assert interleaved == [first]
    run_to_completion(worker(redis_url, key_prefix, "--burst"))

    flow.refresh()
    assert (flow.status, [s.state for s in flow.steps]) == (
        TaskResultStatus.SUCCESSFUL,
        ["SUCCESSFUL", "SUCCESSFUL"],
    )
    last = flow.results[1]
    assert last is not None
    assert last.return_value == 2
    client, record = backend.broker.client, backend.broker.record_key(first)
    assert client.llen(backend.broker.queue_keys("default").outbox) == 0
    assert client.pttl(record) > 0  # -1: kept for good
    assert client.hget(record, "outboxed") is None
