"""``threadmill_worker`` keeps its exit code when its stdout and stderr are closed or their
reader has gone (a log shipper that died): a service manager acts on that code (4: do not
restart; 5: a process died in a burst).

Django writes the system checks' warnings and a ``CommandError`` line through the command's
own streams; a failed write raised in place of ``sys.exit(code)``, so every exit read 1.
"""

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest

from django_threadmill.compat import TaskResultStatus
from tests.backend_support import redis_with_password
from tests.support import ROOT, command_env
from tests.worker import tasks

BURST = ("threadmill_worker", "--processes", "1", "--burst", "--reap-interval", "0")


@contextmanager
def reader_gone() -> Iterator[dict[str, Any]]:
    """stdout and stderr a pipe whose reader has gone: every write fails (EPIPE)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        yield {"stdout": write_end, "stderr": write_end}
    finally:
        os.close(write_end)


@contextmanager
def closed() -> Iterator[dict[str, Any]]:
    """stdout and stderr closed (``>&- 2>&-``): Python starts with ``sys.stderr`` None."""
    yield {"preexec_fn": close_stdout_and_stderr}


def close_stdout_and_stderr() -> None:
    os.close(1)
    os.close(2)


Outputs = Callable[[], AbstractContextManager[dict[str, Any]]]  # Popen's keyword arguments
OUTPUTS: dict[str, Outputs] = {"reader-gone": reader_gone, "closed": closed}


def exit_code(redis_url: str, key_prefix: str, outputs: Outputs) -> int:
    """Run a burst worker with ``outputs``; return its exit code."""
    with outputs() as streams:
        process = subprocess.Popen(
            [sys.executable, "manage.py", *BURST],
            cwd=ROOT,
            env=command_env(redis_url, key_prefix),
            **streams,
        )
    return process.wait(60)


@pytest.mark.parametrize("outputs", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_a_burst_that_ran_its_tasks_exits_0(
    redis_url: str, key_prefix: str, outputs: Outputs
) -> None:
    result = tasks.pid.enqueue()
    assert exit_code(redis_url, key_prefix, outputs) == 0
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL


@pytest.mark.parametrize("outputs", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_a_burst_in_which_a_process_died_exits_5(
    redis_url: str, key_prefix: str, outputs: Outputs
) -> None:
    tasks.end_process.enqueue()
    assert exit_code(redis_url, key_prefix, outputs) == 5


@pytest.mark.parametrize("outputs", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_refused_credentials_exit_4(key_prefix: str, outputs: Outputs) -> None:
    with redis_with_password("worker-secret") as server:
        no_password = f"redis://127.0.0.1:{server.port}/0"
        assert exit_code(no_password, key_prefix, outputs) == 4
