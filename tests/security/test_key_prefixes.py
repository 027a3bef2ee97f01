"""Key prefixes keep two Django projects on one Redis apart: neither sees the other's tasks."""

import signal
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Start
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from tests.lifecycle.support import wait_for_expiry
from tests.support import Command, worker

from . import tasks


def snapshot(client: redis.Redis, prefix: str) -> dict[str, object]:
    """Return every key under ``prefix`` with its dumped value: a byte-exact picture."""
    return {key: client.dump(key) for key in client.scan_iter(f"{prefix}:*", count=1000)}


def test_two_projects_share_a_redis_without_touching_each_other(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    other_prefix = f"{key_prefix}-other"
    other = ThreadmillTaskBackend(
        "default",
        {"LOCATION": redis_url, "OPTIONS": {"key_prefix": other_prefix, "lease_ttl": 1}},
    )
    theirs = [other.enqueue(tasks.touch, [str(tmp_path / f"theirs-{n}")], {}) for n in range(5)]
    [reservation] = other.broker.acquire("default", 1).reservations
    other.broker.start("their-worker", [Start(lease=reservation.lease, started_ms=now_ms())])
    before = snapshot(redis_client, other_prefix)
    ours = [tasks.touch.enqueue(str(tmp_path / f"ours-{n}")) for n in range(5)]
    wait_for_expiry(other.broker, redis_client)  # their lease is one our reaper would settle

    command = worker(redis_url, key_prefix, "--burst", "--reap-interval", "0.1")
    reaper = Command(redis_url, key_prefix, "threadmill_reap", "--interval", "0.1")
    try:
        assert command.wait(60) == 0, command.log
        reaper.wait_for_log("Reaper started")  # its stop handler is in place: a SIGTERM is heard
        reaper.signal(signal.SIGTERM)
        assert reaper.wait(60) == 0, reaper.log
    finally:
        command.close()
        reaper.close()

    for result in ours:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
    assert snapshot(redis_client, other_prefix) == before  # their expired lease was not reaped
    assert not any((tmp_path / f"theirs-{n}").exists() for n in range(5))
    assert all(other.get_result(r.id).status != TaskResultStatus.SUCCESSFUL for r in theirs)
    for key in before:
        redis_client.delete(key)
