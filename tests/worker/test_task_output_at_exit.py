"""What a task prints reaches the worker's output even when stdout is buffered: a worker
process ends with ``os._exit``, which writes no buffer (docs/worker.md, Shutdown)."""

from collections.abc import Callable

from django_threadmill.compat import TaskResultStatus
from tests.support import Command
from tests.worker import tasks


def test_lines_a_task_printed_are_written_when_its_process_exits(
    start_worker: Callable[..., Command],
) -> None:
    printed = [tasks.prints.enqueue(f"printed by task {n}") for n in range(3)]

    # Block-buffered stdout, as under Docker or systemd without PYTHONUNBUFFERED.
    worker = start_worker("--burst", extra_env={"PYTHONUNBUFFERED": ""})
    assert worker.wait(60) == 0, worker.log

    for result in printed:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
    for n in range(3):
        assert f"printed by task {n}\n" in worker.log
