"""A lease renewal that one queue refuses still counts for the queues whose calls Redis took.

The lease keeper renews every queue in one pipeline, one script call per queue. When one call
failed (a key of another type in that queue, docs/lifecycle.md; or, on a Redis Cluster, the
queue's primary down with no replica, docs/scaling.md) the others were still applied, but the
keeper took the round for failed as a whole: it confirmed no lease. Once lease_ttl passed so,
a worker thread refused every reservation of the healthy queues as one that "may have lapsed",
let it go though Redis had kept it renewed, and the task waited for its lease to lapse and a
reaper to hand it back before it ran.
"""

from collections.abc import Callable
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.faults.tasks import count_run, wait_for_file
from tests.support import Command, running, wait_until

LEASE_TTL_S = 3.0  # renewed every second: the test waits out lease_ttl with every renewal failing
MARGIN_MS = 1500  # past the lease clock's lease_ttl, on the Redis clock (the same host's)


def redis_ms(client: redis.Redis) -> float:
    seconds, micros = client.time()
    return seconds * 1000 + micros / 1000


def state_of(backend: ThreadmillTaskBackend, result: TaskResult) -> str | None:
    """Return the state Redis holds for ``result`` (reserved is no status of django.tasks)."""
    record = backend.broker.record_key(result.id)
    assert record is not None
    state: str | None = backend.broker.client.hget(record, "state")
    return state


def test_a_reservation_of_a_queue_renewed_runs_while_another_queue_refuses_its_renewals(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
) -> None:
    runs, gate = tmp_path / "runs.log", tmp_path / "gate"
    client = backend.broker.client
    command = start_worker("--threads", "1", "--prefetch", "1", lease_ttl_s=LEASE_TTL_S)
    with running(command):
        held = wait_for_file.enqueue(str(gate))
        wait_until(lambda: state_of(backend, held) == "running", "the long task's start")
        waiting = count_run.enqueue(str(runs))
        wait_until(lambda: state_of(backend, waiting) == "reserved", "the next task's reservation")

        # Another program's value at a key the renewal of emails writes: that call fails.
        client.set(backend.broker.queue_keys("emails").threads, "another program's value")
        command.wait_for_log(r"Lease renewal failed")
        since_ms = redis_ms(client)  # every renewal from here on fails in emails
        wait_until(
            lambda: redis_ms(client) > since_ms + LEASE_TTL_S * 1000 + MARGIN_MS,
            "lease_ttl of failed renewals",
        )
        leases = backend.broker.queue_keys("default").leases
        assert client.zscore(leases, waiting.id) > redis_ms(client)  # Redis kept renewing it

        gate.write_text("go")
        wait_until(
            lambda: waiting.task.get_result(waiting.id).status == TaskResultStatus.SUCCESSFUL,
            "the reserved task's run",
        )
        client.delete(backend.broker.queue_keys("emails").threads)
        log = command.log

    assert "may have lapsed" not in log, log
    assert (
        "Lease renewal failed held=2 unrenewed=0 "
        "error=not renewed in queue emails, renewed in the others" in log
    )
    assert runs.read_text().split() == [waiting.id]
    assert held.task.get_result(held.id).status == TaskResultStatus.SUCCESSFUL
