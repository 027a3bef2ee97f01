"""What a user writing ``async def`` tasks meets on the event loop lane: each mistake ends in
one recorded outcome with a clear error, and a task that blocks the loop is named.

Every test runs the real ``threadmill_worker`` command in a subprocess.
"""

import re
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import run_to_completion, worker
from tests.worker import async_tasks, loop_misuse_tasks, misbehaving

from .support import run_loop_blockers

BLOCKED = r"Event loop blocked task_id=(\S+) path=(\S+) for_ms=(\d+)"


def blocked(output: str) -> set[tuple[str, str]]:
    """The (task id, path) of every blocked-loop warning in ``output``."""
    return {(task_id, path) for task_id, path, _ in re.findall(BLOCKED, output)}


def test_a_task_blocking_the_loop_under_a_task_timeout_is_named(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """Under --task-timeout the coroutine runs in an asyncio task of its own, whose stack holds
    no frame of the lane: the warning said task_id=unknown path=unknown."""
    blocker, output = run_loop_blockers(
        lambda: async_tasks.blocks_the_loop.enqueue(0.5),
        redis_url,
        key_prefix,
        "--task-timeout",
        "30",
    )
    assert backend.get_result(blocker.id).status == TaskResultStatus.SUCCESSFUL
    assert (blocker.id, "tests.worker.async_tasks.blocks_the_loop") in blocked(output)


def test_a_task_blocking_the_loop_in_a_coroutine_it_gathers_is_named(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """gather() runs each coroutine in an asyncio task of its own: unknown, as above."""
    leaving, output = run_loop_blockers(
        lambda: loop_misuse_tasks.gathers_a_blocking_call.enqueue(0.5), redis_url, key_prefix
    )
    assert backend.get_result(leaving.id).status == TaskResultStatus.SUCCESSFUL
    assert (leaving.id, "tests.worker.loop_misuse_tasks.gathers_a_blocking_call") in blocked(output)


def test_tasks_blocking_the_loop_in_turn_are_each_named(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """Started on one turn of the loop, each blocked it in turn before the loop could beat:
    the first was named, with the whole stall as its own, and the others never."""
    blockers, output = run_loop_blockers(
        lambda: [async_tasks.blocks_the_loop.enqueue(0.3) for _ in range(3)], redis_url, key_prefix
    )
    path = "tests.worker.async_tasks.blocks_the_loop"
    assert {(b.id, path) for b in blockers} <= blocked(output)


def test_a_task_returning_a_coroutine_fails_naming_the_missing_await(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """It failed as a value that is not JSON ("Return strings, numbers, ..."), and Python
    printed "coroutine ... was never awaited" to stderr, outside the worker's log format. An
    async def task under a decorator that is not async was told to be made async def."""
    returned = [
        loop_misuse_tasks.returns_a_coroutine.enqueue(),
        loop_misuse_tasks.returns_a_coroutine_unawaited.enqueue(),
        loop_misuse_tasks.wrapped_by_a_sync_decorator.enqueue(),
    ]
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=60)
    for result in returned:
        result.refresh()
        assert result.status == TaskResultStatus.FAILED
        [error] = result.errors
        assert error.exception_class_path == "builtins.TypeError"
        assert (
            f"TypeError: Task {result.task.module_path!r} returned a coroutine it never awaited. "
            "Await it inside an async def task (return await ...), make the task async def "
            "(and a decorator around it: async def too, or its wrapper marked with asgiref's "
            "markcoroutinefunction), or call it with asgiref's async_to_sync."
        ) in error.traceback
    assert "never awaited" not in output.replace("returned a coroutine it never awaited", "")


def test_a_task_blocking_the_loop_in_a_callback_it_scheduled_is_named(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """A callback (``loop.call_soon``, ``call_later``, ``add_done_callback``) runs in no
    asyncio task: the warning said task_id=unknown path=unknown."""
    blocker, output = run_loop_blockers(
        lambda: loop_misuse_tasks.blocks_in_a_callback.enqueue(0.5), redis_url, key_prefix
    )
    assert backend.get_result(blocker.id).status == TaskResultStatus.SUCCESSFUL
    assert blocked(output) == {(blocker.id, "tests.worker.loop_misuse_tasks.blocks_in_a_callback")}


def test_a_callback_a_task_scheduled_that_raised_is_logged_naming_the_task(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """asyncio reports it with the callback's handle, not a task: it was logged task_id=unknown."""
    result = loop_misuse_tasks.schedules_a_failing_callback.enqueue()
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=60)
    assert backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert (
        f"Event loop error task_id={result.id} "
        "path=tests.worker.loop_misuse_tasks.schedules_a_failing_callback: Exception in callback"
    ) in output
    assert "ValueError: a callback failed" in output


def test_work_a_task_started_and_the_collector_destroyed_is_logged_naming_the_task(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """asyncio reports a task destroyed pending with the task under another key than a failed
    one's: it was logged task_id=unknown."""
    result = loop_misuse_tasks.drops_work_it_started.enqueue()
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=60)
    assert backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert (
        f"Event loop error task_id={result.id} "
        "path=tests.worker.loop_misuse_tasks.drops_work_it_started: Task was destroyed but it is "
        "pending!"
    ) in output


def test_work_a_task_left_running_that_raised_system_exit_is_logged_naming_the_task(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """asyncio lets it out of the loop, past the exception handler that names the task: the
    line named none."""
    marker = tmp_path / "exit-raised"
    leaving = misbehaving.leaves_an_exit_behind.enqueue(str(marker))
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=60)
    assert marker.exists()
    assert backend.get_result(leaving.id).status == TaskResultStatus.SUCCESSFUL
    assert (
        "Event loop: work an async task left running raised SystemExit; the loop runs on "
        f"task_id={leaving.id} path=tests.worker.misbehaving.leaves_an_exit_behind"
    ) in output
