"""Two ways a worker process is stopped from outside without a SIGTERM.

Frozen (SIGSTOP) past its lease while it holds reserved tasks, whose leases a reaper settles
and whose tasks a second worker runs, it starts none of them once it resumes (SIGCONT): its
worker thread took the next reservation from its buffer as its running task returned, before
the lease keeper's first renewal could say the reservations were lost (docs/worker.md, Leases).

Hung up (SIGHUP, which a terminal's hangup sends the whole process group), it stops as on
SIGTERM, letting its running task finish: the default action killed the supervisor and every
worker process at once, each running task left to the reaper (docs/worker.md, Shutdown).
"""

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import LeaseExpired
from django_threadmill.task import task
from django_threadmill.worker.reaper import reap_once
from tests.support import Command, wait_until

from .support import state_of, wait_for_expiry

RESERVED = 3  # tasks reserved behind the running one


def _runs_key() -> str:
    return f"{os.environ['THREADMILL_KEY_PREFIX']}:test-runs"


def _note_run(name: str) -> None:
    """Append ``name`` to the test's Redis list of runs: a second run of a task shows there."""
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    try:
        client.rpush(_runs_key(), name)
    finally:
        client.close()


@task
def held_open(gate: str) -> str:
    """Run until ``gate`` exists (the test opens it while the worker is frozen)."""
    _note_run("held_open")
    deadline = time.monotonic() + 60
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.005)  # this task stands for long work; the test opens the gate
    return "done"


@task
def noted(name: str) -> str:
    _note_run(name)
    return name


def record_field(broker: Broker, redis_client: redis.Redis, task_id: str, name: str) -> str | None:
    key = broker.record_key(task_id)
    assert key is not None
    return redis_client.hget(key, name)


def wait_until_running(broker: Broker, redis_client: redis.Redis, task_id: str) -> None:
    wait_until(
        lambda: record_field(broker, redis_client, task_id, "state") == "running",
        "the task running",
    )


@pytest.mark.parametrize(
    "processes",
    [("--processes", "1"), ("--processes", "0", "--burst")],
    ids=["child-process", "in-process"],
)
def test_a_worker_resumed_after_its_reservations_were_reaped_does_not_run_them_again(
    processes: tuple[str, ...],
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
    key_prefix: str,
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    running_id = held_open.enqueue(str(gate)).id
    reserved_ids = [noted.enqueue(f"noted-{n}").id for n in range(RESERVED)]
    frozen = start_worker(
        *processes, "--threads", "1", "--prefetch", str(RESERVED + 1), "--reap-interval", "0",
        lease_ttl_s=1.0,
    )  # fmt: skip
    wait_until_running(broker, redis_client, running_id)
    assert redis_client.zcard(broker.queue_keys("default").leases) == RESERVED + 1
    [pid] = frozen.child_pids() if processes[1] == "1" else [frozen.process.pid]
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: state_of(pid) == "T", "the worker process frozen")
        wait_for_expiry(broker, redis_client)
        report = reap_once(backend)  # another host's reaper, while the worker is frozen
        assert (report.released, report.failed) == (RESERVED, 1), report
        second = start_worker("--processes", "0", "--burst", "--threads", "1", lease_ttl_s=1.0)
        assert second.wait(60) == 0, second.log
        gate.touch()
    finally:
        os.kill(pid, signal.SIGCONT)
    frozen.wait_for_log(rf"Ack not recorded kind=finish task_id={running_id}: settled or held")

    def runs() -> list[str]:
        return redis_client.lrange(f"{key_prefix}:test-runs", 0, -1)

    def skipped(task_id: str) -> bool:  # whether the lease keeper or the thread saw it first
        pattern = rf"Skipped task whose reservation (was lost|may have lapsed) task_id={task_id}"
        return re.search(pattern, frozen.log) is not None

    wait_until(
        lambda: all(
            skipped(task_id) or runs().count(f"noted-{n}") > 1
            for n, task_id in enumerate(reserved_ids)
        ),
        "each reservation skipped by the resumed worker, or run a second time",
    )
    if processes[1] == "1":
        frozen.signal()
    assert frozen.wait(30) == 0, frozen.log

    assert sorted(runs()) == sorted(["held_open", *(f"noted-{n}" for n in range(RESERVED))]), (
        frozen.log
    )
    for task_id in reserved_ids:
        assert skipped(task_id), frozen.log
        result = backend.get_result(task_id)
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.attempts == 1
    lapsed = backend.get_result(running_id)  # the late return value was not written
    assert lapsed.status == TaskResultStatus.FAILED
    assert [error.exception_class for error in lapsed.errors] == [LeaseExpired]
    assert record_field(broker, redis_client, running_id, "result") is None


def _with_sighup(disposition: str) -> str:
    """The command, started with SIGHUP's ``disposition`` (``SIG_DFL``, ``SIG_IGN``) whatever
    the test runner's is: one run under ``nohup`` (CI may be) hands its ignored SIGHUP down."""
    return (
        f"import signal, sys; signal.signal(signal.SIGHUP, signal.{disposition}); "
        "from django.core.management import execute_from_command_line; "
        "execute_from_command_line(['manage.py', *sys.argv[1:]])"
    )


FROM_A_TERMINAL = _with_sighup("SIG_DFL")  # as a shell starts it
NOHUP = _with_sighup("SIG_IGN")  # under ``nohup``: SIGHUP ignored from the start


@pytest.mark.parametrize(
    "processes",
    [("--processes", "1"), ("--processes", "0", "--burst")],
    ids=["child-process", "in-process"],
)
def test_a_hangup_stops_the_worker_gracefully_letting_its_running_task_finish(
    processes: tuple[str, ...],
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    task_id = held_open.enqueue(str(gate)).id
    worker = Command(
        redis_url, key_prefix, "threadmill_worker", *processes, "--threads", "1",
        lease_ttl_s=1.0, code=FROM_A_TERMINAL,
    )  # fmt: skip
    try:
        wait_until_running(broker, redis_client, task_id)
        # As a terminal's hangup does: every process of the group gets it.
        for pid in {worker.process.pid, *worker.child_pids()}:
            os.kill(pid, signal.SIGHUP)
        worker.wait_for_log(r"Waiting up to 30s for 1 running task to finish")
        gate.touch()
        assert worker.wait(60) == 0, worker.log
        result = backend.get_result(task_id)
        assert result.status == TaskResultStatus.SUCCESSFUL, worker.log
        assert result.attempts == 1
    finally:
        worker.close()


def test_a_worker_started_under_nohup_runs_on_through_a_hangup(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    task_id = held_open.enqueue(str(gate)).id
    worker = Command(
        redis_url, key_prefix, "threadmill_worker", "--processes", "1", "--threads", "1",
        lease_ttl_s=1.0, code=NOHUP,
    )  # fmt: skip
    try:
        wait_until_running(broker, redis_client, task_id)
        for pid in {worker.process.pid, *worker.child_pids()}:
            os.kill(pid, signal.SIGHUP)
        gate.touch()
        wait_until(
            lambda: backend.get_result(task_id).status == TaskResultStatus.SUCCESSFUL,
            "the task SUCCESSFUL",
        )
        assert worker.process.poll() is None, worker.log  # still serving
        worker.signal()
        assert worker.wait(60) == 0, worker.log
        assert "SIGHUP" not in worker.log
    finally:
        worker.close()
