"""Each next step is enqueued exactly once: by real workers, after a worker dies mid-way, and
when two finishers race for a group's callback (docs/workflows.md, Exactly once)."""

import shutil
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, group, step
from tests.support import Command, run_to_completion, worker

from .tasks import collect, counted, together

RACES = 50


def runs(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_burst_worker_runs_a_whole_workflow(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs"
    flow = chain(
        step(counted, 1, str(log)),
        group(step(counted, log=str(log)), step(counted, log=str(log))),
        step(collect, str(log)),
    ).enqueue()

    run_to_completion(worker(redis_url, key_prefix, "--burst", "--threads", "4"))

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert sorted(runs(log)) == ["collect", "counted 1", "counted 1", "counted 1"]
    assert flow.results[-1] is not None
    assert flow.results[-1].return_value == [1, 1]


def dying_env(directory: Path, die_at: str) -> dict[str, str]:
    shutil.copy(Path(__file__).with_name("dying_drainer.py"), directory / "sitecustomize.py")
    return {
        "PYTHONPATH": str(directory),
        "THREADMILL_TEST_DIE_AT": die_at,
        "THREADMILL_TEST_DIED_FILE": str(directory / "died"),
    }


@pytest.mark.parametrize("die_at", ["after-advance", "after-enqueue"])
def test_a_worker_killed_between_a_finish_and_the_next_enqueue_loses_and_repeats_nothing(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    die_at: str,
) -> None:
    log = tmp_path / "runs"
    # The later steps go to a queue the dying worker does not serve: otherwise its prefetcher
    # may reserve the second step between the enqueue and the kill, and that lease would
    # outlive the test.
    later = counted.using(queue_name="emails")
    flow = chain(
        step(counted, 1, str(log)), step(later, log=str(log)), step(later, log=str(log))
    ).enqueue()
    dying = worker(
        redis_url,
        key_prefix,
        "--processes",
        "0",
        "--burst",
        "--queue",
        "default",
        extra_env=dying_env(tmp_path, die_at),
    )
    try:
        assert dying.wait() == -signal.SIGKILL, dying.log
    finally:
        dying.close()
    assert runs(log) == ["counted 1"]
    assert broker.client.llen(broker.queue_keys("default").outbox) == 1  # the entry waits

    reaped = run_to_completion(Command(redis_url, key_prefix, "threadmill_reap", "--once"))
    assert "workflow_steps_advanced=1" in reaped

    run_to_completion(worker(redis_url, key_prefix, "--burst"))
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert runs(log) == ["counted 1"] * 3
    assert broker.client.llen(broker.queue_keys("default").outbox) == 0


def test_two_workers_finishing_a_groups_last_members_at_once_enqueue_one_callback(
    backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    """Each member is on its own queue, run by its own in-process worker in its own thread;
    the members wait for each other, so both finish, and both advance the workflow, at once."""
    log = tmp_path / "runs.log"
    members = [together.using(queue_name="emails"), together.using(queue_name="reports")]
    with ThreadPoolExecutor(max_workers=2) as workers:
        for race in range(RACES):
            flow = group(
                *(step(member, n) for n, member in enumerate(members)),
                then=step(collect, log=str(log)),
            ).enqueue()
            ran = workers.map(lambda m: drain(queues=[m.queue_name], wait_for_delayed=0), members)
            assert list(ran) == [1, 1]

            assert drain(queues=["default"], wait_for_delayed=0) == 1, f"race {race}"
            flow.refresh()
            assert flow.status == TaskResultStatus.SUCCESSFUL
            assert flow.results[-1] is not None
            assert flow.results[-1].return_value == [0, 1]
    assert runs(log) == ["collect"] * RACES
