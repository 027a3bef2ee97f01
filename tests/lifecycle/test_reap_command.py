"""manage.py threadmill_reap: one pass, dry run, option errors, and the loop with SIGTERM."""

import signal

import pytest
import redis
from django.core.management import CommandError

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from tests.servers.redis_server import free_port, redis_process
from tests.support import Command, output_of, run_to_completion, wait_until

from .support import run, wait_for_expiry
from .tasks import plain

# call_command runs the command's logging setup in the test's own process.
pytestmark = pytest.mark.usefixtures("logging_put_back")


def reap_loop(redis_url: str, key_prefix: str) -> Command:
    """Start ``threadmill_reap`` looping every 0.05 s, with the tests' short lease."""
    return Command(redis_url, key_prefix, "threadmill_reap", "--interval", "0.05", lease_ttl_s=1.0)


def test_once_settles_and_prints_counts_per_queue(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)
    assert "Settled queue=default released=0 failed=1 retried=0 stale=0" in output_of(
        "threadmill_reap", "--once"
    )
    assert backend.get_result(task_id).status == TaskResultStatus.FAILED


def test_dry_run_prints_lines_and_changes_nothing(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)
    output = output_of("threadmill_reap", "--dry-run", "--batch-size", "10")
    assert f"queue=default task_id={task_id} action=fail worker=test-worker-1" in output
    assert "Would settle queue=default released=0 failed=1" in output
    assert backend.get_result(task_id).status == TaskResultStatus.RUNNING


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "nope"], "--backend nope: TASKS has no backend 'nope'. Use an alias"),
        (["--interval", "0"], "--interval 0 is not positive"),
        (["--batch-size", "0"], "--batch-size 0 is not a whole number from 1 to 10,000"),
        # Once sent to Redis as is, and refused there as a key holding the wrong kind of value.
        (["--batch-size", "99999999999999999999"], "--batch-size 99999999999999999999 is not a"),
    ],
)
@pytest.mark.usefixtures("backend")
def test_bad_options_name_the_fix(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        output_of("threadmill_reap", "--once", *args)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_loop_settles_leases_as_they_expire_and_stops_cleanly_on_a_signal(
    stop_signal: signal.Signals,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
) -> None:
    reaper = reap_loop(redis_url, key_prefix)
    try:
        task_id = plain.enqueue().id
        run(broker)
        wait_until(
            lambda: backend.get_result(task_id).status == TaskResultStatus.FAILED,
            "the looping reaper failing the expired attempt",
        )
        # The pass logs once it settled; a stop before that leaves the pass behind.
        reaper.wait_for_log("Lease expired, task FAILED")
        reaper.signal(stop_signal)
        assert reaper.wait() == 0, reaper.log
        log = reaper.log
    finally:
        reaper.close()
    assert "Reaper started backend=default interval_s=0.05 batch_size=500" in log
    assert f"Lease expired, task FAILED task_id={task_id} worker=test-worker-1" in log
    assert f"Reaper stopping signal={stop_signal.name}" in log
    assert "Reaper stopped backend=default passes=" in log


def test_once_with_redis_down_exits_1_naming_the_problem(key_prefix: str) -> None:
    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    once = Command(down, key_prefix, "threadmill_reap", "--once")
    try:
        assert once.wait() == 1
        assert f"Redis at {down} is unreachable" in once.log
    finally:
        once.close()


def test_loop_keeps_going_while_redis_is_down(key_prefix: str) -> None:
    with redis_process() as server:
        loop = reap_loop(server.url, key_prefix)
        try:
            loop.wait_for_log("Reaper started")
            server.kill()
            loop.wait_for_log(r"(?s)(Reap pass failed, retrying next interval.*){2}")
            loop.signal(signal.SIGTERM)
            assert loop.wait() == 0, loop.log
        finally:
            loop.close()


def test_each_failed_lease_is_logged_once(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
) -> None:
    """The reaper's own line says it, with the worker; Django's task_finished line would say it
    again (the usual LOGGING, the root logger on the console, prints both)."""
    task_id = plain.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)
    fresh = {"DJANGO_SETTINGS_MODULE": "testproject.settings_fresh"}
    once = Command(redis_url, key_prefix, "threadmill_reap", "--once", extra_env=fresh)
    log = run_to_completion(once)
    [line] = [line for line in log.splitlines() if task_id in line]
    assert line.endswith(
        f" ERROR django_threadmill.worker.reaper pid={once.process.pid} threadmill-wait-reap "
        f"Lease expired, task FAILED task_id={task_id} worker=test-worker-1"
    )
