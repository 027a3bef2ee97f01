"""What a user writing ``async def`` tasks meets on the event loop lane: each mistake ends in
one recorded outcome with a clear error, and a task that blocks the loop is named.

Every test runs the real ``threadmill_worker`` command in a subprocess.
"""

import re

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import run_to_completion, worker
from tests.worker import async_tasks, loop_misuse_tasks

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
    printed "coroutine ... was never awaited" to stderr, outside the worker's log format."""
    returned = [
        loop_misuse_tasks.returns_a_coroutine.enqueue(),
        loop_misuse_tasks.returns_a_coroutine_unawaited.enqueue(),
    ]
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=60)
    for result in returned:
        result.refresh()
        assert result.status == TaskResultStatus.FAILED
        [error] = result.errors
        assert error.exception_class_path == "builtins.TypeError"
        assert (
            f"TypeError: Task {result.task.module_path!r} returned a coroutine it never awaited. "
            "Await it inside an async def task (return await ...), make the task async def, or "
            "call it with asgiref's async_to_sync."
        ) in error.traceback
    assert "never awaited" not in output.replace("returned a coroutine it never awaited", "")
