"""Helpers every test package shares: waiting with a deadline, a clock moved by hand, running
manage.py commands, and counting the script calls a Redis served."""

import errno
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from importlib.util import find_spec
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command
from redis.connection import AbstractConnection

from django_threadmill.enqueue import pipeline as pipeline_module
from tests.servers.redis_server import server_version

ROOT = Path(__file__).resolve().parents[1]  # the checkout, where manage.py lives


def wait_until(condition: Callable[[], object], what: str, timeout_s: float = 60.0) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` never happened. The default
    deadline is wait_for_log's: on a loaded 2-core machine a worker command just started took
    24 s of the 30 s it had to take its first tasks."""
    if not holds_within(condition, timeout_s):
        raise AssertionError(f"{what} did not happen within {timeout_s}s")


def holds_within(condition: Callable[[], object], timeout_s: float) -> bool:
    """Poll ``condition`` until it holds or ``timeout_s`` passed; tell whether it held."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)  # polling with a deadline, not synchronising
    return True


class HandClock[T]:
    """A clock the test moves by hand: it reads ``now`` (monotonic seconds, or a datetime)."""

    def __init__(self, now: T) -> None:
        self.now = now

    def __call__(self) -> T:
        return self.now


def read_at_once[T](read: Callable[[], T], threads: int = 16, reads: int = 20) -> set[T]:
    """Call ``read`` ``reads`` times in each of ``threads`` threads started together; return
    what the calls returned: more threads than pooled connections must wait for one."""
    start = threading.Barrier(threads)

    def reads_of_one(_: int) -> list[T]:
        start.wait()
        return [read() for _ in range(reads)]

    with ThreadPoolExecutor(threads, thread_name_prefix="test-pool") as pool:
        return {found for founds in pool.map(reads_of_one, range(threads)) for found in founds}


@contextmanager
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count what the clients write to Redis: one write per command or per pipeline."""
    writes: list[int] = []
    send = AbstractConnection.send_packed_command

    def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        writes.append(1)
        send(self, command, check_health)

    with monkeypatch.context() as patch:
        patch.setattr(AbstractConnection, "send_packed_command", counted)
        yield writes


def django_backend(name: str) -> str:
    """Return the dotted path of Django's own task backend ``name`` ("dummy.DummyBackend",
    "immediate.ImmediateBackend"): in django.tasks, or in the backport under Django 5.2."""
    package = "django.tasks" if find_spec("django.tasks") else "django_tasks"
    return f"{package}.backends.{name}"


def command_calls(client: redis.Redis) -> Counter[str]:
    """The calls of each command the server behind ``client`` has served, those scripts made
    included (INFO commandstats), leaving out the CONFIG RESETSTAT that zeroes them: Redis 7
    counts it as "config|resetstat", Redis 6.2, which counts no subcommand apart, as "config".
    A command never served reads 0: INFO lists none of those."""
    calls = Counter(
        {
            name.removeprefix("cmdstat_"): int(stats["calls"])
            for name, stats in client.info("commandstats").items()
        }
    )
    if calls.pop("config|resetstat", None) is None and "config" in calls:
        calls["config"] -= 1
        if not calls["config"]:
            del calls["config"]
    return calls


def script_calls(client: redis.Redis) -> int:
    """The EVAL and EVALSHA calls the server behind ``client`` has served."""
    served = command_calls(client)
    return served.get("evalsha", 0) + served.get("eval", 0)


def command_env(
    redis_url: str,
    key_prefix: str,
    lease_ttl_s: float = 60.0,
    options: dict[str, object] | None = None,
) -> dict[str, str]:
    """Return the environment a subprocess needs to use the test's Redis, key prefix and OPTIONS."""
    return {
        **os.environ,
        "REDIS_URL": redis_url,
        "THREADMILL_KEY_PREFIX": key_prefix,
        "THREADMILL_LEASE_TTL": str(lease_ttl_s),
        "THREADMILL_OPTIONS": json.dumps(options or {}),
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "PYTHONUNBUFFERED": "1",
    }


def run_python(
    *args: str, redis_url: str, key_prefix: str, options: dict[str, object] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a new Python with ``args`` (``-c``, ``-m``, ``manage.py``) in the test project's
    environment, with ``options`` as its OPTIONS; return how it ended, its output captured."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=command_env(redis_url, key_prefix, options=options),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


class Command:
    """A ``manage.py`` command running in a subprocess, its stderr captured to a file.

    ``code``: Python to run with ``args`` instead of ``manage.py`` (``python -c code *args``),
    for a test that changes something in the process before it calls the command.
    """

    def __init__(
        self,
        redis_url: str,
        key_prefix: str,
        *args: str,
        lease_ttl_s: float = 60.0,
        extra_env: dict[str, str] | None = None,
        options: dict[str, object] | None = None,
        code: str | None = None,
    ) -> None:
        self._log = tempfile.NamedTemporaryFile(prefix="threadmill-cmd-", suffix=".log")  # noqa: SIM115
        program = ["manage.py"] if code is None else ["-c", code]
        self.process = subprocess.Popen(
            [sys.executable, *program, *args],
            cwd=ROOT,
            env={**command_env(redis_url, key_prefix, lease_ttl_s, options), **(extra_env or {})},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def log(self) -> str:
        """The command's output so far: its complete lines while it runs (a line read while
        it was being written read ``pid=1349`` for ``pid=13499``), all of it once it exited."""
        text = Path(self._log.name).read_text()
        if self.process.poll() is not None:
            return text
        return text[: text.rfind("\n") + 1]

    def wait_for_log(self, pattern: str, timeout_s: float = 60.0) -> re.Match[str]:
        """Wait until the output matches ``pattern``; return the last match. A failure shows
        the log's last lines: what the command did instead is the clue."""
        try:
            wait_until(lambda: re.search(pattern, self.log), f"log line {pattern!r}", timeout_s)
        except AssertionError as missing:
            tail = "\n".join(self.log.splitlines()[-40:])
            raise AssertionError(f"{missing}; the log ends:\n{tail}") from None
        return list(re.finditer(pattern, self.log))[-1]

    def child_pids(self) -> list[int]:
        """Return the pids of the worker processes spawned so far, oldest first."""
        return [
            int(pid) for pid in re.findall(r"Worker process spawned slot=\d+ pid=(\d+)", self.log)
        ]

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout_s: float = 60.0) -> int:
        """Wait for the command to exit; kill it and fail if it does not in time."""
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"command did not exit within {timeout_s}s:\n{self.log}") from None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


def worker(
    redis_url: str,
    key_prefix: str,
    *args: str,
    lease_ttl_s: float = 60.0,
    extra_env: dict[str, str] | None = None,
    options: dict[str, object] | None = None,
) -> Command:
    """Start ``threadmill_worker`` with one process unless ``args`` say otherwise."""
    defaults = [] if "--processes" in args else ["--processes", "1"]
    return Command(
        redis_url,
        key_prefix,
        "threadmill_worker",
        *defaults,
        *args,
        lease_ttl_s=lease_ttl_s,
        extra_env=extra_env,
        options=options,
    )


def run_to_completion(command: Command, timeout_s: float = 60.0, code: int = 0) -> str:
    """Wait for a ``--burst`` or ``--once`` command to exit with ``code``; return its log;
    close it."""
    try:
        assert command.wait(timeout_s) == code, command.log
        return command.log
    finally:
        command.close()


@contextmanager
def running(command: Command, ready: str = r"Worker process started") -> Iterator[Command]:
    """Keep ``command`` running for the block once it logs ``ready``; then SIGTERM, exit 0."""
    try:
        command.wait_for_log(ready)
        yield command
        command.signal()
        assert command.wait(60) == 0, command.log
    finally:
        command.close()


def close_pipelines(key_prefix: str) -> None:
    """Forget the enqueue pipelines made for ``key_prefix`` and close their connections.

    A pipeline lives as long as its process (enqueue/pipeline.py). Each test's own key prefix
    makes its own, and left open their sockets added up to over a thousand descriptors in one
    run of the suite.
    """
    with pipeline_module._pipelines_lock:
        ours = [key for key in pipeline_module._pipelines if key[3] == key_prefix]
        made = [pipeline for key in ours for pipeline in pipeline_module._pipelines.pop(key)]
    for pipeline in made:
        if "client" in vars(pipeline.broker):  # made on first use (a cached_property)
            pipeline.broker.client.close()


def output_of(command: str, *args: str) -> str:
    """Run the management command ``command`` in this process; return what it printed."""
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def release_fifo(fifo: Path) -> bool:
    """Open ``fifo`` for writing and close it, once its reader waits: the reader reads EOF.
    False when no reader has it open (yet, or any more)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        return False
    return True


def unknown_command_words(command: str, *args: str) -> str:
    """Redis's words for ``command`` unknown to it, as the test server's binary says them, the
    space after the last argument left out (as our errors leave it): Redis 7 quotes in ', one
    space between the arguments; Redis 6.2 in backticks, a comma after each argument."""
    if server_version()[1] >= (7, 0):
        words, quoted = f"unknown command '{command}'", " ".join(f"'{arg}'" for arg in args)
    else:
        words, quoted = f"unknown command `{command}`", " ".join(f"`{arg}`," for arg in args)
    return f"{words}, with args beginning with: {quoted}" if args else words


def no_permission_words(command: str, subcommand: str = "") -> str:
    """Redis's words for a command the ACL user may not run, as the test server's binary says
    them: Redis 7 names the subcommand ("the 'config|get' command"); Redis 6.2 does not ("the
    'config' command or its subcommand")."""
    if server_version()[1] >= (7, 0):
        named = f"{command}|{subcommand}" if subcommand else command
        return f"no permissions to run the '{named}' command"
    return f"no permissions to run the '{command}' command or its subcommand"
