"""Our commands, run from ``manage.py``, move what Django's set-up built into the collector's
permanent generation before they run (docs/worker.md, What the set-up built).

The cyclic collector walked those objects (some 80,000: Django's apps, models, URL patterns
and every module imported) at each full collection, in the worker processes too, and once more
at the interpreter's exit, which took 0.2-0.3 s of each worker's and each health probe's CPU on
a 2-CPU VM. ``call_command`` leaves the caller's collector as it was.
"""

import gc
import textwrap
from collections.abc import Callable
from io import StringIO

import pytest
from django.core.management import call_command

from django_threadmill.task import task
from tests.support import Command

SET_UP_OBJECTS = 10_000  # Django's set-up of the test project alone leaves about 75,000

# manage.py with argv[1:], saying at exit how many objects the collector keeps frozen: atexit
# runs once the command returned, before the interpreter's teardown.
FROZEN_AT_EXIT = textwrap.dedent(
    """
    import atexit
    import gc
    import sys

    from django.core.management import execute_from_command_line

    atexit.register(lambda: print(f"frozen={gc.get_freeze_count()}"))
    execute_from_command_line(["manage.py", *sys.argv[1:]])
    """
)


@task
def objects_frozen_here() -> int:
    return gc.get_freeze_count()


@pytest.mark.parametrize(
    "args",
    [
        ("threadmill_worker", "--processes", "1", "--burst"),
        ("threadmill_worker", "--processes", "0", "--burst"),
        ("threadmill_reap", "--once"),
        ("threadmill_health",),
        ("threadmill_queue", "damaged"),
        ("threadmill_schedules",),
    ],
    ids=lambda args: " ".join(args),
)
def test_a_command_run_from_manage_py_runs_with_the_set_up_frozen(
    redis_url: str, key_prefix: str, args: tuple[str, ...]
) -> None:
    command = Command(redis_url, key_prefix, *args, code=FROZEN_AT_EXIT)
    try:
        command.wait(60)
        frozen = command.wait_for_log(r"frozen=(\d+)")
    finally:
        command.close()
    assert int(frozen[1]) > SET_UP_OBJECTS, command.log


def test_a_forked_worker_process_runs_its_tasks_with_the_set_up_frozen(
    start_worker: Callable[..., Command],
) -> None:
    result = objects_frozen_here.enqueue()

    worker = start_worker("--threads", "1", "--burst")
    assert worker.wait(60) == 0, worker.log

    result.refresh()
    assert result.return_value > SET_UP_OBJECTS


def test_call_command_leaves_the_callers_collector_as_it_was(redis_url: str) -> None:
    frozen = gc.get_freeze_count()

    call_command("threadmill_schedules", stdout=StringIO())
    call_command("threadmill_queue", "damaged", stdout=StringIO())

    assert gc.get_freeze_count() == frozen
