"""A step's outbox entry drained by two workers at once leaves its record counted right, so the
step, requeued and ended again, still expires after ``result_ttl``.

Every worker drains its queues' whole outbox after its own finishes, so two workers often read
the same entry (two worker commands of two processes each, on 50 groups of 21 steps: 430 to
1,048 of the 1,050 entries, in four runs). The second to take it out (forget_entry.lua) found
it gone, read the record's count of waiting entries as absent, and wrote 1 back: once the step
was requeued (the admin's retry of a failed group member) and ended again, its drain saw one
more entry waiting and never gave the record its expiry (43 to 50 of the 50 members requeued).
"""

import os
import textwrap
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.workflows import chain, step
from tests.support import Command, release_fifo, run_to_completion, wait_until, worker

from .tasks import add, boom

# A burst worker in this process whose drainer, once it advanced a workflow from an entry,
# waits until the FIFO argv[1] is opened for writing before it takes the entry out.
HELD_AFTER_ITS_ADVANCE = textwrap.dedent(
    """
    import sys

    import django

    django.setup()

    from django.core.management import execute_from_command_line

    from django_threadmill.workflows import advance

    fifo = sys.argv[1]
    advance_from = advance.advance_from

    def held(*args, **kwargs):
        advanced = advance_from(*args, **kwargs)
        print("Held after its advance", flush=True)
        with open(fifo) as released:
            released.read()
        return advanced

    advance.advance_from = held
    execute_from_command_line(
        ["manage.py", "threadmill_worker", "--processes", "0", "--burst"]
    )
    """
)


def test_a_failed_step_drained_twice_then_requeued_expires_after_its_new_end(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    flow = chain(step(boom, 0), step(add, 1)).enqueue()
    failing = flow.steps[0].task_id
    client, record = backend.broker.client, backend.broker.record_key(failing)
    fifo = tmp_path / "release"
    os.mkfifo(fifo)

    held = Command(redis_url, key_prefix, str(fifo), code=HELD_AFTER_ITS_ADVANCE)
    try:
        held.wait_for_log("Held after its advance")
        # A second drainer takes the same entry out while the first holds it.
        reaped = run_to_completion(Command(redis_url, key_prefix, "threadmill_reap", "--once"))
        assert "workflow_steps_advanced=1" in reaped
        wait_until(lambda: release_fifo(fifo), "the held drainer opening the FIFO")
        assert held.wait() == 0, held.log
    finally:
        held.close()
    assert client.pttl(record) > 0

    backend.requeue(failing)  # the admin's retry: the workflow stays FAILED
    run_to_completion(worker(redis_url, key_prefix, "--burst"))

    flow.refresh()
    assert (flow.status, [s.state for s in flow.steps]) == (
        TaskResultStatus.FAILED,
        ["FAILED", "NOT_RUN"],
    )
    requeued = flow.results[0]
    assert requeued is not None
    assert len(requeued.errors) == 2  # its first attempt's, and the requeued one's
    assert client.llen(backend.broker.queue_keys("default").outbox) == 0
    assert client.pttl(record) > 0  # -1: kept for good
    assert client.hget(record, "outboxed") is None
