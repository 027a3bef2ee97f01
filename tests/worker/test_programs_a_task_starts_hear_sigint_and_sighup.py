"""A program a task starts hears SIGINT and SIGHUP as any program does.

A worker process its supervisor runs leaves those two to the supervisor, which relays them as a
stop. It ignored them (``SIG_IGN``), and an ignored signal stays ignored across ``exec``: every
program a task started ignored both, so a task could not interrupt its own subprocess with
SIGINT, and a Python one never raised ``KeyboardInterrupt``. The worker process now hears them
and does nothing, which ``exec`` resets to the default.
"""

import signal
import subprocess

from django_threadmill.compat import TaskResultStatus
from django_threadmill.task import task
from tests.support import run_to_completion, worker


@task
def stop_signals_a_program_started_here_ignores() -> list[str]:
    """Return which of SIGINT and SIGHUP a program this task starts ignores (Linux's
    ``/proc/<pid>/status``: ``SigIgn`` is a mask, bit n-1 for signal n)."""
    status = subprocess.run(
        ["cat", "/proc/self/status"], capture_output=True, text=True, check=True
    ).stdout
    mask = int(
        next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16
    )
    return [signum.name for signum in (signal.SIGINT, signal.SIGHUP) if mask >> (signum - 1) & 1]


def test_a_task_subprocess_ignores_neither_sigint_nor_sighup(
    redis_url: str, key_prefix: str
) -> None:
    result = stop_signals_a_program_started_here_ignores.enqueue()
    log = run_to_completion(worker(redis_url, key_prefix, "--burst", "--reap-interval", "0"))
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, log
    # Started under nohup (as these tests may be), the worker keeps ignoring SIGHUP, by design
    # (docs/worker.md), and so does every program it starts.
    under_nohup = signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    assert result.return_value == (["SIGHUP"] if under_nohup else [])
