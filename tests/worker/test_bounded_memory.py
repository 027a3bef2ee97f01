"""What a long-running worker keeps per task, id or error stays bounded (docs/worker.md,
Memory): each test drives many distinct keys through the real path and counts what is kept."""

import logging

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.ids import make_task_id, new_task_hex
from django_threadmill.workflows import advance
from django_threadmill.workflows.advance import drain
from django_threadmill.workflows.failed_entries import RETRY_AFTER_S, FailedEntries
from tests.support import HandClock


def a_bug_in_every_advance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every advance raise something unexpected, as a bug in a deploy would."""

    def buggy(backend: ThreadmillTaskBackend, task_id: str, part: str | None = None) -> None:
        raise RuntimeError(f"a bug met {task_id}")

    monkeypatch.setattr(advance, "advance_from", buggy)


def test_a_drainer_forgets_failed_entries_another_drainer_advanced(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A worker's drainer held every entry that failed for good: one that another process's
    drainer advanced (or a purge took) never came back to be forgotten, so a process meeting
    a recurring bug for weeks grew by one entry per failure."""
    caplog.set_level(logging.CRITICAL, logger=advance.__name__)  # 10,000 tracebacks unformatted
    outbox = backend.broker.queue_keys("default").outbox
    clock = HandClock(1000.0)
    mine = FailedEntries(clock)  # this process's drainer: it lives as long as the process
    per_minute = 1000
    for _ in range(10):
        ids = [make_task_id(new_task_hex(), "default") for _ in range(per_minute)]
        redis_client.rpush(outbox, *ids)
        with monkeypatch.context() as patched:
            a_bug_in_every_advance(patched)
            assert drain(backend, "default", mine) == 0  # each fails here, and is held
        # Another process's drainer, on code without the bug, takes them out (their records
        # are gone: there is nothing to advance, and no advance is counted).
        assert drain(backend, "default", FailedEntries(clock)) == 0
        assert redis_client.llen(outbox) == 0
        clock.now += RETRY_AFTER_S  # every hold has ended
    assert redis_client.llen(outbox) == 0
    assert len(mine._retry_at) <= 2 * per_minute
