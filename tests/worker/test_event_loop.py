"""``async def`` tasks run many at once on one event loop per process, with the threads' care.

Every test runs the real ``threadmill_worker`` command in a subprocess.
"""

import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reaper import reap_once
from tests.support import Command, run_to_completion, wait_until, worker
from tests.worker import async_tasks, tasks

from .support import run_loop_blockers

IN_FLIGHT = 500


def test_five_hundred_async_tasks_are_in_flight_at_once_in_one_process(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    results = backend.enqueue_many(
        async_tasks.meet, [((IN_FLIGHT, 60.0), {}) for _ in range(IN_FLIGHT)]
    )
    run_to_completion(
        worker(
            redis_url,
            key_prefix,
            "--burst",
            "--threads",
            "1",
            "--async-concurrency",
            str(IN_FLIGHT),
            "--prefetch",
            str(2 * IN_FLIGHT),
        ),
        timeout_s=120,
    )
    for result in results:
        result.refresh()
    assert Counter(r.status for r in results) == {TaskResultStatus.SUCCESSFUL: IN_FLIGHT}
    assert len({r.return_value for r in results}) == 1  # one process ran them all


def test_task_timeout_cancels_an_async_task_and_the_loop_goes_on(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    stuck = async_tasks.forever.enqueue(str(tmp_path / "started"))
    quick = async_tasks.nap.enqueue(0.01, str(tmp_path / "runs.log"))
    output = run_to_completion(
        worker(redis_url, key_prefix, "--burst", "--task-timeout", "0.5"), timeout_s=60
    )
    stuck.refresh()
    quick.refresh()
    assert stuck.status == TaskResultStatus.FAILED
    [error] = stuck.errors
    assert error.exception_class_path == "django_threadmill.exceptions.TaskTimeout"
    assert "ran longer than --task-timeout=0.5s; the worker cancelled it" in error.traceback
    assert quick.status == TaskResultStatus.SUCCESSFUL
    assert "Task failed task_id=" in output


def test_graceful_shutdown_lets_coroutines_in_flight_finish(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    started = [tmp_path / f"started-{n}" for n in range(5)]
    waiting = [async_tasks.wait_for_file.enqueue(str(gate), str(mark)) for mark in started]
    command = start_worker("--threads", "1", "--grace-period", "30")
    wait_until(lambda: all(mark.exists() for mark in started), "every coroutine starting")
    command.signal(signal.SIGTERM)
    command.wait_for_log(r"Waiting up to 30s for 5 running tasks to finish")
    gate.touch()
    assert command.wait(60) == 0, command.log
    for result in waiting:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL


def test_coroutines_still_running_at_the_deadline_are_handed_back_not_run_twice(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    started = tmp_path / "started"
    stuck = async_tasks.forever.enqueue(str(started))
    command = start_worker("--threads", "1", "--grace-period", "0.2", lease_ttl_s=1.0)
    wait_until(started.exists, "the coroutine starting")
    command.signal(signal.SIGTERM)
    # Forced, as a thread still running then: the attempt is left to the reaper (it exited 0).
    assert command.wait(60) == 1, command.log
    assert "Grace period over, cancelling async tasks count=1" in command.log
    assert backend.get_result(stuck.id).status == TaskResultStatus.RUNNING  # handed back
    wait_until(lambda: reap_once(backend).failed == 1, "the reaper settling the lapsed lease")
    result = backend.get_result(stuck.id)
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == [
        "django_threadmill.exceptions.LeaseExpired"
    ]


def test_a_task_that_blocks_the_loop_is_named_with_how_long(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    blocker, output = run_loop_blockers(
        lambda: async_tasks.blocks_the_loop.enqueue(0.5), redis_url, key_prefix
    )
    assert backend.get_result(blocker.id).status == TaskResultStatus.SUCCESSFUL
    assert (
        f"Event loop blocked task_id={blocker.id} "
        "path=tests.worker.async_tasks.blocks_the_loop for_ms="
    ) in output


def test_async_tasks_get_context_retries_and_enqueue_from_inside(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    context = async_tasks.who_am_i.enqueue()
    flaky = async_tasks.flaky.enqueue(str(tmp_path / "first"))
    inner = async_tasks.enqueue_square.enqueue(7)
    run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=60)
    for result in (context, flaky, inner):
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert context.return_value == [context.id, 1]
    assert flaky.return_value == "second attempt"
    assert len(flaky.worker_ids) == 2
    square = backend.get_result(inner.return_value)
    assert square.status == TaskResultStatus.SUCCESSFUL
    assert square.return_value == 49
    assert tasks.square.module_path == square.task.module_path


def test_a_slow_orm_call_holds_up_no_other_async_tasks_end(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """asgiref runs thread-sensitive calls one at a time in one thread: closing its stale
    connections after each task waited there behind another task's slow query, holding up the
    outcome (and concurrency slot, and timeout) of every async task."""
    command = start_worker("--threads", "1")
    connects = async_tasks.connects_from_the_loop.enqueue()
    wait_until(lambda: backend.get_result(connects.id).is_finished, "a connection in that thread")
    release, started = tmp_path / "release", tmp_path / "started"
    slow = async_tasks.holds_the_orm_thread.enqueue(str(release), str(started))
    wait_until(started.exists, "a slow query holding that thread")

    quick = async_tasks.who_am_i.enqueue()
    wait_until(lambda: backend.get_result(quick.id).is_finished, "the quick task recorded")
    assert not backend.get_result(slow.id).is_finished

    release.touch()
    wait_until(lambda: backend.get_result(slow.id).is_finished, "the slow task recorded")
    command.signal(signal.SIGTERM)
    assert command.wait(60) == 0, command.log


def test_work_an_async_task_left_running_is_cancelled_at_shutdown(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """As asyncio.run ends what is left on its loop: the work's finally blocks run."""
    ended = tmp_path / "ended"
    result = async_tasks.leaves_work_running.enqueue(str(ended))
    command = start_worker("--threads", "1")
    wait_until(lambda: backend.get_result(result.id).is_finished, "the task returning")
    assert not ended.exists()
    command.signal(signal.SIGTERM)
    assert command.wait(60) == 0, command.log
    assert ended.exists()


def test_work_left_running_that_raises_system_exit_when_cancelled_stops_nothing(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """asyncio lets a SystemExit out of the loop: it ended the event loop's thread at the end
    of the stop, and the burst exited 5 as if the worker had crashed."""
    ended = tmp_path / "ended"
    result = async_tasks.leaves_an_exit_running.enqueue(str(ended))
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=60)
    assert ended.exists()
    assert backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert (
        "Work an async task left running failed at shutdown "
        "error=SystemExit('the work left running exits')"
    ) in output
    assert "Thread died" not in output


def test_work_left_running_that_stops_the_loop_when_cancelled_stops_nothing(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """``loop.stop()`` in its ``finally`` ended the wait for the work left running with a
    RuntimeError, which ended the event loop's thread: the burst exited 5."""
    ended = tmp_path / "ended"
    result = async_tasks.leaves_a_loop_stop_running.enqueue(str(ended))
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=60)
    assert ended.exists()
    assert backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert "Thread died" not in output


def test_an_async_task_raising_system_exit_under_a_timeout_fails_as_its_own_error(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """Under --task-timeout the coroutine runs as an asyncio task of its own, which re-raised
    its SystemExit into the loop: an ERROR blamed work some task had left running."""
    result = async_tasks.exits.enqueue()
    output = run_to_completion(
        worker(redis_url, key_prefix, "--burst", "--task-timeout", "30"), timeout_s=60
    )
    failed = backend.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED
    [error] = failed.errors
    assert error.exception_class_path == "builtins.SystemExit"
    assert "SystemExit: the task exits" in error.traceback
    assert "left running raised" not in output
