"""manage.py threadmill_reap: one pass, dry run, option errors, and the loop with SIGTERM."""

import signal
from io import StringIO
from typing import IO

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from testproject.redis_server import free_port, redis_process

from .support import manage, run, wait_for_expiry, wait_until
from .tasks import plain


def reap(*args: str) -> str:
    out = StringIO()
    call_command("threadmill_reap", *args, stdout=out)
    return out.getvalue()


def test_once_settles_and_prints_counts_per_queue(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)
    assert "Settled queue=default released=0 failed=1 retried=0 stale=0" in reap("--once")
    assert backend.get_result(task_id).status == TaskResultStatus.FAILED


def test_dry_run_prints_lines_and_changes_nothing(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)
    output = reap("--dry-run", "--batch-size", "10")
    assert f"queue=default task_id={task_id} action=fail worker=test-worker-1" in output
    assert "Would settle queue=default released=0 failed=1" in output
    assert backend.get_result(task_id).status == TaskResultStatus.RUNNING


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "nope"], "Unknown task backend 'nope'. Pass --backend with an alias"),
        (["--interval", "0"], "--interval 0 is not positive"),
        (["--batch-size", "0"], "--batch-size 0 is below 1"),
    ],
)
@pytest.mark.usefixtures("backend")
def test_bad_options_name_the_fix(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        reap("--once", *args)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_loop_settles_leases_as_they_expire_and_stops_cleanly_on_a_signal(
    stop_signal: signal.Signals,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
) -> None:
    reaper = manage(redis_url, key_prefix, "threadmill_reap", "--interval", "0.05")
    try:
        task_id = plain.enqueue().id
        run(broker)
        wait_until(
            lambda: backend.get_result(task_id).status == TaskResultStatus.FAILED,
            "the looping reaper failing the expired attempt",
        )
        reaper.send_signal(stop_signal)
        _, stderr = reaper.communicate(timeout=10)
    finally:
        reaper.kill()
        reaper.wait()
    assert reaper.returncode == 0, stderr
    assert "Reaper started backend=default interval_s=0.05 batch_size=500" in stderr
    assert f"Lease expired, task FAILED task_id={task_id} worker=test-worker-1" in stderr
    assert f"Reaper stopping signal={stop_signal.name}" in stderr
    assert "Reaper stopped backend=default passes=" in stderr


def test_once_with_redis_down_exits_1_naming_the_problem(key_prefix: str) -> None:
    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    once = manage(down, key_prefix, "threadmill_reap", "--once")
    _, stderr = once.communicate(timeout=30)
    assert once.returncode == 1
    assert f"Redis at {down} is unreachable" in stderr


def read_until(stream: IO[str], text: str, times: int = 1) -> None:
    """Read ``stream`` line by line until ``text`` has been seen ``times`` times."""
    seen = 0
    for line in stream:
        seen += text in line
        if seen == times:
            return
    raise AssertionError(f"the process exited before logging {text!r} {times} time(s)")


def test_loop_keeps_going_while_redis_is_down(key_prefix: str) -> None:
    with redis_process() as server:
        loop = manage(server.url, key_prefix, "threadmill_reap", "--interval", "0.05")
        try:
            assert loop.stderr is not None
            read_until(loop.stderr, "Reaper started")
            server.kill()
            read_until(loop.stderr, "Reap pass failed, retrying next interval", times=2)
            loop.send_signal(signal.SIGTERM)
            loop.communicate(timeout=10)
        finally:
            loop.kill()
            loop.wait()
    assert loop.returncode == 0
