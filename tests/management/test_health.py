"""manage.py threadmill_health: each exit code, from a real probe subprocess.

Workers run with the shortest lease settings take (1 s: a heartbeat every third of a second), so
a killed worker's sighting goes stale within a second and the probe is polled until it says so.
"""

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path

import pytest
import redis
from django.core.management import CommandError, call_command
from django.test import override_settings

from django_threadmill.aliases import threadmill_backend
from django_threadmill.codec.ids import worker_host_and_pid
from django_threadmill.management.commands.threadmill_health import Command as HealthCommand
from django_threadmill.management.health import HealthCode
from tests.backend_support import redis_with_password
from tests.conftest import tasks_setting
from tests.servers.redis_server import free_port
from tests.support import ROOT, Command, command_calls, command_env, running, wait_until

LEASE_TTL_S = 1.0
HOST = socket.gethostname()

Probe = Callable[..., subprocess.CompletedProcess[str]]


def probe_at(
    url: str,
    key_prefix: str,
    *args: str,
    lease_ttl_s: float = LEASE_TTL_S,
    options: dict[str, object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py threadmill_health`` once against ``url`` (with these OPTIONS); return
    its exit and output."""
    return subprocess.run(
        [sys.executable, "manage.py", "threadmill_health", *args],
        cwd=ROOT,
        env=command_env(url, key_prefix, lease_ttl_s, options),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def probe(redis_url: str, key_prefix: str) -> Probe:
    return lambda *args: probe_at(redis_url, key_prefix, *args)


def until_exit(probe: Probe, code: HealthCode, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the probe until it exits ``code``; return that run."""
    runs: list[subprocess.CompletedProcess[str]] = []
    wait_until(
        lambda: runs.append(probe(*args)) or runs[-1].returncode == code,
        f"threadmill_health {' '.join(args)} exiting {code}",
        timeout_s=30,
    )
    return runs[-1]


def one_line(text: str) -> str:
    assert text.count("\n") == 1, text
    return text


@pytest.fixture
def short_lease_worker(
    start_worker: Callable[..., Command],
) -> Callable[..., Command]:
    return lambda *args: start_worker(*args, lease_ttl_s=LEASE_TTL_S)


def test_healthy_while_this_hosts_worker_processes_renew(
    probe: Probe, short_lease_worker: Callable[..., Command]
) -> None:
    with running(short_lease_worker("--processes", "2")):
        healthy = until_exit(probe, HealthCode.HEALTHY, "--min-processes", "2")
        assert healthy.stdout == (
            f"Healthy host={HOST} live=2 min_processes=2 queues=default,emails,reports "
            "lease_ttl_s=1\n"
        )
        assert healthy.stderr == ""
        assert probe("-v", "0").stdout == ""


def test_counts_only_this_host_and_the_queues_asked(
    probe: Probe, short_lease_worker: Callable[..., Command]
) -> None:
    with running(short_lease_worker("--queue", "emails")):
        until_exit(probe, HealthCode.HEALTHY, "--queue", "emails")
        too_few = probe("--queue", "emails", "--queue", "emails", "--min-processes", "2")
        elsewhere = probe("--host", "elsewhere.example")
        other_queue = probe("--queue", "default")
    assert too_few.returncode == HealthCode.TOO_FEW
    assert f"host={HOST} live=1 min_processes=2 queues=emails lease_ttl_s=" in one_line(
        too_few.stderr
    )  # a queue asked twice is named once
    assert elsewhere.returncode == HealthCode.TOO_FEW
    assert "host=elsewhere.example live=0" in one_line(elsewhere.stderr)
    assert "last_seen=never live_elsewhere=1:" in elsewhere.stderr
    assert other_queue.returncode == HealthCode.TOO_FEW
    assert "queues=default lease_ttl_s=1 last_seen=never" in one_line(other_queue.stderr)


def kill_group(worker: Command) -> None:
    """SIGKILL the supervisor and its processes, as the OOM killer or a node loss would.

    The supervisor is stopped first, so it can neither restart a killed process nor let one
    see it exit and stop gracefully.
    """
    supervisor = worker.process.pid
    os.kill(supervisor, signal.SIGSTOP)
    wait_until(lambda: state_of(supervisor) == "T", "the supervisor stopping")
    for pid in worker.child_pids():
        os.kill(pid, signal.SIGKILL)
    os.kill(supervisor, signal.SIGKILL)
    worker.wait()


def state_of(pid: int) -> str:
    """Return the state letter /proc gives a process (R, S, T, Z, ...)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0]


def test_a_killed_worker_group_turns_unhealthy_once_its_heartbeat_is_stale(
    probe: Probe, short_lease_worker: Callable[..., Command]
) -> None:
    worker = short_lease_worker("--processes", "2")
    worker.wait_for_log(r"(?s)Worker process started.*Worker process started")
    until_exit(probe, HealthCode.HEALTHY, "--min-processes", "2")
    kill_group(worker)
    unhealthy = until_exit(probe, HealthCode.TOO_FEW)
    reason = one_line(unhealthy.stderr)
    assert f"Unhealthy host={HOST} live=0 min_processes=1" in reason
    assert re.search(r"last_seen=\d+\.\ds_ago live_elsewhere=0:", reason), reason
    assert "Check that threadmill_worker runs on this host" in reason
    assert reason.endswith(
        "; a worker process first renews as soon as it has started and reached Redis.\n"
    )
    assert unhealthy.stdout == ""


def test_a_fresh_worker_is_seen_at_once_not_a_renewal_later(
    redis_url: str, key_prefix: str, start_worker: Callable[..., Command]
) -> None:
    """The lease keeper renews when its process starts: with a 10-minute lease_ttl the next
    renewal is 200 s away, far past this test's deadline."""
    long_lease_s = 600.0
    with running(start_worker("--processes", "1", lease_ttl_s=long_lease_s)):
        wait_until(
            lambda: (
                probe_at(redis_url, key_prefix, lease_ttl_s=long_lease_s).returncode
                == HealthCode.HEALTHY
            ),
            "threadmill_health seeing the fresh worker",
            timeout_s=30,
        )


def test_redis_down_exits_3_unless_a_liveness_probe_lets_it_pass(key_prefix: str) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"
    down = probe_at(closed, key_prefix)
    assert down.returncode == HealthCode.UNREACHABLE
    assert f"Unhealthy host={HOST}: Redis at {closed} is unreachable" in one_line(down.stderr)
    passed = probe_at(closed, key_prefix, "--redis-down-ok")
    assert passed.returncode == HealthCode.HEALTHY
    assert "Redis unavailable, passing (--redis-down-ok)" in one_line(passed.stderr)


def test_refused_credentials_exit_4_even_with_redis_down_ok(key_prefix: str) -> None:
    with redis_with_password("health-secret") as server:
        no_password = f"redis://127.0.0.1:{server.port}/0"
        refused = probe_at(no_password, key_prefix, "--redis-down-ok")
    assert refused.returncode == HealthCode.REFUSED
    assert "refused the credentials" in one_line(refused.stderr)


@pytest.fixture
def silent_redis() -> Iterator[str]:
    """A port that accepts connections and never answers: a Redis hung or black-holed."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


def test_timeout_bounds_a_redis_that_never_answers(silent_redis: str, key_prefix: str) -> None:
    """The backend's own read timeout, 600 s here, would hold the probe past this run's 60 s.
    (A bound on the probe's wall time, under the default 10 s, failed on a loaded machine,
    where Python and Django alone took that long to start.)"""
    hung = probe_at(silent_redis, key_prefix, "--timeout", "0.3", options={"socket_timeout": 600})
    assert hung.returncode == HealthCode.UNREACHABLE
    assert "Timeout reading from" in one_line(hung.stderr)


# redis-py's own timeouts, which override the backend's socket_timeout and pool_timeout
PROJECT_TIMEOUTS = {"socket_timeout": 600, "socket_connect_timeout": 600, "timeout": 600}


def test_timeout_bounds_the_probe_where_connection_options_set_longer_ones(
    silent_redis: str, key_prefix: str
) -> None:
    """Left in force, the project's 600 s would hold the probe past this run's own 60 s (an
    orchestrator kills it at its timeoutSeconds and counts a failure, --redis-down-ok or not)."""
    hung = probe_at(
        silent_redis,
        key_prefix,
        "--timeout",
        "0.3",
        options={"connection_options": PROJECT_TIMEOUTS},
    )
    assert hung.returncode == HealthCode.UNREACHABLE
    assert "Timeout reading from" in one_line(hung.stderr)


def test_the_probes_redis_waits_are_timeout_each(redis_url: str, key_prefix: str) -> None:
    """Each of the three: the connect, a reply, a free pooled connection."""
    with override_settings(
        TASKS=tasks_setting(redis_url, key_prefix, connection_options=PROJECT_TIMEOUTS)
    ):
        backend = threadmill_backend("default")
        client = HealthCommand._probe_broker(backend, 0.3).client
        assert backend.settings.connection_options == PROJECT_TIMEOUTS  # the backend keeps its own
    assert isinstance(client, redis.Redis)
    pool = client.connection_pool
    assert isinstance(pool, redis.BlockingConnectionPool)
    assert pool.connection_kwargs["socket_timeout"] == 0.3
    assert pool.connection_kwargs["socket_connect_timeout"] == 0.3
    assert pool.timeout == 0.3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "nope"], "--backend nope: TASKS has no backend 'nope'"),
        (["--queue", "nope"], "--queue: Queue 'nope' is not in TASKS['default']['QUEUES']"),
        (["--queue", "no way"], "--queue: Queue name 'no way' is not valid"),
        (["--min-processes", "0"], "--min-processes 0 is below 1"),
        (["--timeout", "0"], "--timeout 0 is not positive"),
    ],
)
def test_bad_options_exit_2_naming_the_fix(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=re.escape(message)) as raised:
        call_command("threadmill_health", *args, stdout=StringIO())
    assert raised.value.returncode == HealthCode.USAGE


def test_a_timeout_of_nan_exits_2_from_the_command_line(key_prefix: str) -> None:
    refused = probe_at(f"redis://127.0.0.1:{free_port()}/0", key_prefix, "--timeout", "nan")
    assert refused.returncode == HealthCode.USAGE
    assert refused.stderr.endswith(
        "manage.py threadmill_health: error: argument --timeout: 'nan' is not a finite number "
        "of seconds. Use e.g. 10 or 0.5.\n"
    )
    assert refused.stdout == ""


@pytest.mark.parametrize(
    ("worker_id", "host"),
    [("pod-7f9c:12:ab01", "pod-7f9c"), ("web-1.example.com:3:ffff", "web-1.example.com")],
)
def test_host_of_a_worker_id(worker_id: str, host: str) -> None:
    assert worker_host_and_pid(worker_id)[0] == host


def test_the_probe_reads_the_clock_the_queues_and_the_heartbeats_only(
    probe: Probe, redis_url: str
) -> None:
    """Three calls, each bounded by --timeout: the worker's held tasks and threads (two
    HMGETs a queue, a fourth round trip) are the admin's to read, not a probe's."""
    client = redis.Redis.from_url(redis_url)
    client.config_resetstat()
    assert probe("--min-processes", "1").returncode == HealthCode.TOO_FEW  # no worker runs
    calls = command_calls(client)
    names = ("time", "smembers", "zrevrange", "zrevrangebyscore", "hmget")
    assert {name: calls.get(name) for name in names} == {
        "time": 1,
        "smembers": 1,  # the queue names (none asked with --queue)
        "zrevrange": None,
        # the live and the newest silent sightings of default, emails and reports, one pipeline
        "zrevrangebyscore": 6,
        "hmget": None,
    }
