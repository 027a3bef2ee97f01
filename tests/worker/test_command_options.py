"""Invalid threadmill_worker options fail fast with a message that names the fix."""

import re
from collections.abc import Callable

import pytest
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker.process import WorkerProcess
from tests.support import Command
from tests.worker.support import worker_options


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--queue", "nope"], "Queue 'nope' is not in TASKS['default']['QUEUES']"),
        (["--queue", "bad name"], "Queue name 'bad name' is not valid"),
        (["--threads", "0"], "--threads must be 1 or more, got 0."),
        (["--processes", "-1"], "--processes must be 0 or more, got -1."),
        (["--processes", "0"], "--processes 0 runs the worker in this process until the queues"),
        (
            ["--processes", "0", "--burst", "--max-tasks", "5"],
            "--max-tasks recycles a worker process, which --processes 0 has no supervisor",
        ),
        (
            ["--processes", "0", "--burst", "--max-memory", "500"],
            "--max-memory recycles a worker process, which --processes 0 has no supervisor",
        ),
        (["--prefetch", "0"], "--prefetch must be 1 or more, got 0."),
        (["--prefetch", "20000"], "--prefetch 20000 is above the ceiling of 10000"),
        (["--max-tasks", "0"], "--max-tasks must be 1 or more, got 0."),
        (["--max-tasks-jitter", "5"], "--max-tasks-jitter needs --max-tasks."),
        (["--max-memory", "0"], "--max-memory must be 1 or more, got 0."),
        (["--max-memory", "1"], "--max-memory 1 is below the "),
        (["--grace-period", "-1"], "--grace-period must be 0 or more seconds."),
        (["--reap-interval", "-1"], "--reap-interval must be 0 (off) or more seconds."),
        (["--task-timeout", "0"], "--task-timeout must be more than 0 seconds."),
        (["--backend", "missing"], "--backend missing: TASKS has no backend 'missing'."),
    ],
)
@pytest.mark.usefixtures("logging_put_back")
def test_bad_options_are_refused_before_anything_starts(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("threadmill_worker", *args)


@pytest.mark.parametrize(
    ("args", "code", "last_line"),
    [
        (["--threads", "0"], 1, "CommandError: --threads must be 1 or more, got 0."),
        (
            ["--threads", "x"],
            2,
            "manage.py threadmill_worker: error: argument --threads: invalid int value: 'x'",
        ),
    ],
    ids=["bad value: Django's 1", "bad command line: argparse's 2"],
)
def test_a_worker_that_cannot_start_exits_as_django_and_argparse_do(
    args: list[str], code: int, last_line: str, start_worker: Callable[..., Command]
) -> None:
    """The same codes as a forced stop (1) and a supervisor giving up (2), told apart by the
    output and by coming before the supervisor starts (docs/worker.md, Exit codes)."""
    command = start_worker(*args)
    assert command.wait() == code, command.log
    assert command.log.splitlines()[-1] == last_line
    assert "Supervisor started" not in command.log


def test_threads_are_named_by_role(backend: ThreadmillTaskBackend) -> None:
    options = worker_options(threads=3, prefetch=12)
    crew = WorkerProcess(options, backend).crew
    names = [t.name for t in [crew.prefetcher, crew.writer, crew.keeper, *crew.pool.threads]]
    assert names == [
        "threadmill-prefetcher",
        "threadmill-ack-writer",
        "threadmill-lease-keeper",
        "threadmill-worker-1",
        "threadmill-worker-2",
        "threadmill-worker-3",
    ]
