"""threadmill_health and threadmill_queue at their edges: output nobody reads, hand-written keys.

A probe answers with its exit code. Before, a healthy probe whose stdout was closed, whose reader
had gone or that was full exited 1 (read as "too few") or 120, and a Redis down exited 1, not 3,
when stderr could not take the line. A pause key or damaged entry written by hand with a time
past the year 9999, or digits int() does not read ("²"), failed threadmill_queue with a
traceback.
"""

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import pytest
import redis
from django.test import override_settings

from django_threadmill.aliases import threadmill_backend
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.management.health import HealthCode
from tests.conftest import tasks_setting
from tests.durability.conftest import primary_with_replica
from tests.servers.redis_server import RedisProcess, free_port, redis_process
from tests.support import ROOT, command_env, output_of

HOST = socket.gethostname()


@contextmanager
def unwritable(how: str, channel: str) -> Iterator[tuple[list[str], IO[bytes] | int | None]]:
    """Yield a shell prefix and a stream that make ``channel`` (stdout or stderr) a descriptor
    no line can be written to: one whose reader has gone (``| head -c0``), one closed
    (``>&-``), one full (``/dev/full``)."""
    match how:
        case "reader gone":
            read_end, write_end = os.pipe()
            os.close(read_end)  # before the probe starts: its first write meets EPIPE
            try:
                yield [], write_end
            finally:
                os.close(write_end)
        case "closed":
            descriptor = 1 if channel == "stdout" else 2
            yield ["sh", "-c", f'exec "$@" {descriptor}>&-', "sh"], None
        case _:
            with open("/dev/full", "wb") as full:
                yield [], full


def cut_short(how: str, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py argv`` in ``env`` with a stdout no line can be written to, as ``how``
    says; its stderr is read."""
    with unwritable(how, "stdout") as (shell, stream):
        return subprocess.run(
            [*shell, sys.executable, "manage.py", *argv],
            cwd=ROOT,
            env=env,
            stdout=stream,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )


def probe(
    url: str, key_prefix: str, how: str, *args: str, channel: str, buffered: bool = False
) -> subprocess.CompletedProcess[bytes]:
    """Run ``threadmill_health`` with ``channel`` unwritable as ``how`` says; ``buffered``: with
    Python's own buffering, which writes stdout at exit (the tests' env turns it off)."""
    env = command_env(url, key_prefix)
    if buffered:
        del env["PYTHONUNBUFFERED"]
    with unwritable(how, channel) as (shell, stream):
        return subprocess.run(
            [*shell, sys.executable, "manage.py", "threadmill_health", *args],
            cwd=ROOT,
            env=env,
            stdout=stream if channel == "stdout" else subprocess.PIPE,
            stderr=stream if channel == "stderr" else subprocess.PIPE,
            timeout=60,
            check=False,
        )


HOW = ["reader gone", "closed", "full"]


@pytest.mark.parametrize("buffered", [False, True])
@pytest.mark.parametrize("how", HOW)
def test_a_healthy_probe_exits_0_whatever_its_stdout(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, how: str, buffered: bool
) -> None:
    backend.broker.renew(f"{HOST}:4242:ab12", [], ["default"])  # a live process of this host
    unread = probe(redis_url, key_prefix, how, channel="stdout", buffered=buffered)
    assert (unread.returncode, unread.stderr) == (HealthCode.HEALTHY, b"")
    read = subprocess.run(
        [sys.executable, "manage.py", "threadmill_health"],
        cwd=ROOT,
        env=command_env(redis_url, key_prefix),
        capture_output=True,
        check=False,
    )
    assert (read.returncode, read.stdout[:8]) == (HealthCode.HEALTHY, b"Healthy ")


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(
    ("args", "code"),
    [([], HealthCode.UNREACHABLE), (["--redis-down-ok"], HealthCode.HEALTHY)],
)
def test_redis_down_keeps_its_exit_code_whatever_its_stderr(
    key_prefix: str, how: str, args: list[str], code: HealthCode
) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"
    down = probe(closed, key_prefix, how, *args, channel="stderr")
    assert (down.returncode, down.stdout) == (code, b"")


def probe_with(
    url: str, key_prefix: str, durability: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """Run ``threadmill_health`` against ``url`` with OPTIONS['durability'], once a process
    of this host has renewed there."""
    with override_settings(TASKS=tasks_setting(url, key_prefix)):
        threadmill_backend("default").broker.renew(f"{HOST}:4242:ab12", [], ["default"])
    return subprocess.run(
        [sys.executable, "manage.py", "threadmill_health", *args],
        cwd=ROOT,
        env=command_env(url, key_prefix, options={"durability": durability}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def lone_primary() -> Iterator[RedisProcess]:
    """A Redis of this module's own, with no replica and no AOF, whatever REDIS_URL names."""
    with redis_process() as server:
        yield server


def test_replicated_durability_with_no_replica_is_unhealthy_as_redis_down(
    lone_primary: RedisProcess, key_prefix: str
) -> None:
    """The worker renews its leases, but retries its first ack batch until a replica confirms
    it: before, the probe said Healthy while no outcome was written."""
    unconfirmed = probe_with(lone_primary.url, key_prefix, "replicated")
    assert unconfirmed.returncode == HealthCode.UNREACHABLE
    assert unconfirmed.stderr == (
        f"CommandError: Unhealthy host={HOST} live=1 min_processes=1 "
        "queues=default,emails,reports lease_ttl_s=60: TASKS['default'] at "
        f"{lone_primary.url}: durability='replicated' but no replica is connected: enqueues and "
        "acks fail until one is. Connect a replica (REPLICAOF), or use durability='local'.\n"
    )
    passed = probe_with(lone_primary.url, key_prefix, "replicated", "--redis-down-ok")
    assert passed.returncode == HealthCode.HEALTHY
    assert passed.stderr.startswith(
        f"Redis unavailable, passing (--redis-down-ok) host={HOST} live=1 "
    )


def test_fsync_durability_without_the_aof_is_unhealthy(
    lone_primary: RedisProcess, key_prefix: str
) -> None:
    unconfirmed = probe_with(lone_primary.url, key_prefix, "fsync")
    assert unconfirmed.returncode == HealthCode.UNREACHABLE
    assert "durability='fsync' needs" in unconfirmed.stderr


def test_replicated_durability_with_a_replica_is_healthy(key_prefix: str) -> None:
    with primary_with_replica() as primary:
        confirmed = probe_with(primary.url, key_prefix, "replicated")
    assert confirmed.returncode == HealthCode.HEALTHY, confirmed.stderr
    assert confirmed.stdout.startswith(f"Healthy host={HOST} live=1 ")


def pause_by_hand(backend: ThreadmillTaskBackend, redis_client: redis.Redis, value: str) -> str:
    """Set queue emails' pause key as ``redis-cli SET`` would; return what pausing it says."""
    redis_client.set(backend.broker.queue_keys("emails").paused, value)
    return output_of("threadmill_queue", "pause", "emails")


@pytest.mark.parametrize(
    ("value", "since"),
    [
        ("99999999999999999 ops: disk full", " since unknown time by ops (disk full)"),
        ("²³ ops: disk full", " since unknown time by ? (²³ ops: disk full)"),
    ],
)
def test_a_hand_written_pause_time_that_is_no_time_reads_as_unknown(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, value: str, since: str
) -> None:
    assert pause_by_hand(backend, redis_client, value) == (
        f"The queue emails of backend default was paused already{since}; nothing changed.\n"
    )


def test_damaged_entries_with_hand_written_times_are_listed(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    redis_client.hset(
        backend.broker.queue_keys("emails").damaged,
        mapping={"far": "99999999999999999 acquire: why", "odd": "² reap: why"},
    )
    assert output_of("threadmill_queue", "damaged", "emails").splitlines() == [
        "queue=emails id=odd at=unknown time script=? reason=² reap: why",
        "queue=emails id=far at=unknown time script=acquire reason=why",
    ]


def test_an_id_given_twice_is_forgotten_once_and_not_called_missing(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Before: "Forgot 0 damaged record(s) ...; not in its damaged list: dup", exit 1, for an
    entry that was forgotten."""
    key = backend.broker.queue_keys("emails").damaged
    redis_client.hset(key, mapping={"dup": "1700000000000 acquire: why", "kept": "1 reap: x"})
    assert output_of("threadmill_queue", "forget-damaged", "emails", "dup", "dup") == (
        "Forgot 1 damaged record(s) of queue emails.\n"
    )
    assert redis_client.hkeys(key) == ["kept"]
