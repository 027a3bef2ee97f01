"""-v means what it says, whatever the project's LOGGING routes to the root logger."""

from collections.abc import Callable

import pytest

from tests.support import Command
from tests.worker import tasks

FRESH_PROJECT = {"DJANGO_SETTINGS_MODULE": "testproject.settings_fresh"}


def run_burst(
    start_worker: Callable[..., Command], *args: str, **env: str
) -> tuple[list[str], str]:
    """Enqueue three tasks, drain them with a --burst worker; return their ids and its output."""
    ids = [tasks.square.enqueue(n).id for n in range(3)]
    worker = start_worker("--burst", *args, extra_env={**FRESH_PROJECT, **env})
    assert worker.wait() == 0, worker.log
    return ids, worker.log


def test_default_verbosity_prints_no_line_per_task_through_a_root_console_handler(
    start_worker: Callable[..., Command],
) -> None:
    ids, log = run_burst(start_worker)
    assert "Worker process started" in log
    assert not [task_id for task_id in ids if task_id in log], log


def test_verbosity_2_prints_one_line_per_task(start_worker: Callable[..., Command]) -> None:
    ids, log = run_burst(start_worker, "-v", "2")
    for task_id in ids:
        assert log.count(f"Task succeeded task_id={task_id} ") == 1, log
        assert f"Task id={task_id}" not in log, log  # Django's own two lines stay quiet


def test_a_project_that_configures_django_tasks_keeps_its_choice(
    start_worker: Callable[..., Command],
) -> None:
    ids, log = run_burst(start_worker, THREADMILL_DJANGO_TASKS_LEVEL="INFO")
    for task_id in ids:
        assert f"Task id={task_id} path=tests.worker.tasks.square state=SUCCESSFUL" in log, log


@pytest.mark.parametrize("verbosity", ["0", "1"])
def test_a_failure_is_printed_at_every_verbosity(
    start_worker: Callable[..., Command], verbosity: str
) -> None:
    failing = tasks.exit_now.enqueue()
    worker = start_worker("--burst", "-v", verbosity, extra_env=FRESH_PROJECT)
    assert worker.wait() == 0, worker.log
    assert f"Task failed task_id={failing.id}" in worker.log
    assert ("Worker process started" in worker.log) is (verbosity == "1")
