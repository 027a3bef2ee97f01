"""A pause reaches a rate-limited queue's task a worker reserved before it and that still waits
for its start turn: the task goes back to READY, in its place, and runs after the resume, instead
of starting at its turn, up to an interval into the pause. And the pause keeps who paused the
queue whole, ": " and all (docs/lifecycle.md, Pausing a queue). Real worker and queue commands,
real Redis."""

import socket
from collections.abc import Callable
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.broker.pausing import QueuePause
from django_threadmill.compat import TaskResultStatus
from tests.limits.tasks import stamp
from tests.pausing import succeeded
from tests.support import Command, output_of, run_to_completion, running, wait_until

RATE = {"queue_limits": {"emails": {"rate": "15/m"}}}  # a start every 4 s
# Another worker's start left the next turn this far off: the reserved task waits for it out of
# the way (past 50 ms), and it stays within the interval (a turn further off is brought to one).
TURN_OFF_MS = 3_500


def next_start_in(backend: ThreadmillTaskBackend, redis_client: redis.Redis, ms: int) -> None:
    """Say another worker just started a task of "emails": its next start comes in ``ms``."""
    seconds, micros = redis_client.time()
    paced = backend.broker.queue_keys("emails").paced
    redis_client.set(paced, seconds * 1000 + micros // 1000 + ms)


def test_a_task_waiting_for_its_turn_when_the_queue_is_paused_waits_ready_for_the_resume(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    """It ran at its turn, 3.5 s into the pause (an hour into it under "1/h")."""
    keys = backend.broker.queue_keys("emails")
    log = tmp_path / "starts.log"
    with running(start_worker("--threads", "1", options=RATE)):
        next_start_in(backend, redis_client, TURN_OFF_MS)
        first, second = stamp.enqueue(str(log)), stamp.enqueue(str(log))
        wait_until(lambda: redis_client.zcard(keys.leases) == 1, "the first task reserved")
        backend.broker.pause("emails", "test")

        wait_until(lambda: redis_client.zcard(keys.leases) == 0, "the reservation ended")
        assert redis_client.zrange(keys.ready, 0, -1) == [first.id, second.id]  # in its place
        assert not log.exists()
        first.refresh()
        assert (first.status, first.worker_ids) == (TaskResultStatus.READY, [])

        backend.broker.resume("emails", "test")
        wait_until(lambda: succeeded(first) and succeeded(second), "both run after the resume")
    assert [len(result.worker_ids) for result in (first, second)] == [1, 1]  # one attempt each
    assert first.started_at is not None
    assert second.started_at is not None
    assert first.started_at < second.started_at  # in order


def test_an_author_holding_a_colon_and_space_reads_back_whole(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """A login name (or a custom user model's username) may hold ": ", where the note was read
    back split: the author cut there, the rest taken for the reason, in the admin and here."""
    pause = Command(
        redis_url,
        key_prefix,
        "threadmill_queue",
        *("pause", "emails", "--reason", "mail provider down"),
        extra_env={"LOGNAME": "ops: night shift"},
    )
    run_to_completion(pause)
    by = f"ops: night shift@{socket.gethostname()} with manage.py threadmill_queue"

    note = Inspector(backend.broker).paused(["emails"])["emails"]
    assert (note.by, note.reason) == (by, "mail provider down")
    said = output_of("threadmill_queue", "pause", "emails")
    assert f" by {by} (mail provider down); nothing changed.\n" in said


def test_a_pause_an_earlier_version_wrote_reads_as_it_did(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Its note split at the first ": ": the best reading of what it stored."""
    paused = backend.broker.queue_keys("emails").paused
    redis_client.set(paused, "1700000000000 ada in the admin: deploy: step 2 of 3")
    assert Inspector(backend.broker).paused(["emails"])["emails"] == QueuePause(
        at_ms=1_700_000_000_000, by="ada in the admin", reason="deploy: step 2 of 3"
    )
