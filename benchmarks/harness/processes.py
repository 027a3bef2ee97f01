"""Worker and client subprocesses: start, stop with a deadline, CPU of the process tree."""

import contextlib
import json
import os
import resource
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psutil

from ..peers.base import REPO_DIR

STOP_GRACE_S = 15.0  # SIGTERM, then this long to exit, then SIGKILL
OUTPUT_CHUNK = 65536  # bytes per read of a worker's output pipe: a whole pipe buffer


def children_cpu_s() -> float:
    """CPU seconds of every child this process has waited for (and their waited children)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tree_processes(pid: int) -> list[psutil.Process]:
    """A live process and its descendants; empty once it has exited."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def rss_mb(processes: list[psutil.Process]) -> float | None:
    """Resident memory of ``processes`` in MiB (those that exited count nothing), or None."""
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total / 2**20 if total else None


def tree_rss_mb(pid: int) -> float | None:
    """Resident memory of a live process tree in MiB, or None once it has exited."""
    return rss_mb(tree_processes(pid))


class TreeMemory:
    """The peak resident memory of a process tree, from samples the watcher takes at each poll.

    Each sample reads the RSS of the processes already known (one /proc read each); the tree is
    looked up again (a walk of every process on the machine) at most every REFRESH_S, which
    catches the worker processes a supervisor forks at start-up.
    """

    REFRESH_S = 0.25

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.processes: list[psutil.Process] = []
        self.refreshed_at: float | None = None
        self.peak_mb: float | None = None

    def sample(self, now: float) -> None:
        """Add one sample taken at ``now`` (time.perf_counter seconds)."""
        if self.refreshed_at is None or now - self.refreshed_at >= self.REFRESH_S:
            self.processes = tree_processes(self.pid)
            self.refreshed_at = now
        if (now_mb := rss_mb(self.processes)) is not None:
            self.peak_mb = max(self.peak_mb or 0.0, now_mb)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds used so far by a live process and its descendants."""
    return cpu_s(tree_processes(pid))


def cpu_s(processes: list[psutil.Process]) -> float:
    """CPU seconds used so far by ``processes`` (those that exited count nothing)."""
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def copy_output(pipe: IO[bytes], log_path: Path) -> None:
    """Copy a worker's output pipe to its log file until the worker closes it."""
    with pipe, log_path.open("wb", buffering=0) as log:
        while chunk := os.read(pipe.fileno(), OUTPUT_CHUNK):
            log.write(chunk)


@dataclass
class Worker:
    """One worker process; its output goes through a pipe to a log file the errors quote.

    A pipe that this process drains costs the worker what a console or a log collector does:
    a write per line (stderr is line-buffered), a wait when the reader falls behind, and the
    reader's CPU on the same machine. A file would skip the last two; /dev/null all three.
    """

    argv: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    output: threading.Thread | None = field(default=None, init=False)

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.argv, cwd=REPO_DIR, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert self.process.stdout is not None
        self.output = threading.Thread(
            target=copy_output,
            args=(self.process.stdout, self.log_path),
            name="bench-worker-output",
        )
        self.output.start()

    @property
    def pid(self) -> int:
        assert self.process is not None, "the worker was never started"
        return self.process.pid

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log_tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> int:
        """Stop the worker (SIGTERM, SIGKILL at the deadline) and reap it; return its exit code."""
        assert self.process is not None, "the worker was never started"
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            # The whole tree: a child left alive would hold the output pipe open.
            for process in reversed(tree_processes(self.pid)):
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
            code = self.process.wait()
        if self.output is not None:
            self.output.join()  # the pipe closes when the worker tree has exited
        return code


def run_client(argv: list[str], env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """Run one client command and return the JSON it printed; fail with its stderr."""
    finished = subprocess.run(
        argv, cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=timeout_s
    )
    if finished.returncode != 0:
        command = " ".join(argv[1:])
        raise RuntimeError(
            f"Client {command!r} exited {finished.returncode}:\n{finished.stderr[-3000:]}"
        )
    report: dict[str, Any] = json.loads(finished.stdout.strip().splitlines()[-1])
    return report
