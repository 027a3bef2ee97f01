"""Tasks for the worker tests, at module level so worker processes import them."""

import os
import time
from pathlib import Path

from django_threadmill.compat import task


@task
def square(n: int) -> int:
    return n * n


@task(queue_name="emails")
def square_email(n: int) -> int:
    return n * n


@task(queue_name="reports")
def square_report(n: int) -> int:
    return n * n


@task
def exit_now() -> None:
    raise SystemExit(3)


@task
def end_process() -> None:
    os._exit(1)  # the whole worker process, as a C extension's abort or the OOM killer would


@task
def interrupt() -> None:
    raise KeyboardInterrupt


@task
def returns_a_set() -> set[int]:
    return {1, 2}


@task
def returns_keys_json_would_merge() -> dict[object, str]:
    return {1: "int", "1": "str"}


@task
def pid() -> int:
    return os.getpid()


@task
def work_for(seconds: float, marker: str = "") -> float:
    """Stand for real work that takes ``seconds``; write ``marker`` first, if given."""
    if marker:
        Path(marker).write_text("started")
    time.sleep(seconds)  # the task's own work, not test synchronisation
    return seconds


@task
def count_run(log_path: str, value: int) -> int:
    """Append ``value`` to ``log_path``, so tests count executions outside Redis."""
    with open(log_path, "a") as log:
        log.write(f"{value}\n")
    return value


@task
def wait_for_file(path: str) -> str:
    """Hold a worker thread until ``path`` exists: work that waits, as I/O does."""
    while not Path(path).exists():
        time.sleep(0.01)  # the task's own wait, polled; the test creates the file
    return "done"


@task
def wait_then_enqueue(path: str) -> str:
    """Hold a worker thread until ``path`` exists, then enqueue a follow-up (``pid``): work a
    task leaves behind as it ends, as a retry or a workflow's next step is."""
    while not Path(path).exists():
        time.sleep(0.01)  # the task's own wait, polled; the test creates the file
    return pid.enqueue().id


@task
def prints(line: str) -> None:
    print(line)  # buffered where stdout is no terminal: a pipe to a log collector, a file


@task
def chars(count: int) -> str:
    """Return ``count`` characters: a large result built by the task, not passed to it."""
    return "x" * count
