"""A Ctrl-C while an operator's command waits on a Redis that does not answer ends it with one
line, not Python's KeyboardInterrupt traceback.

Before, ``threadmill_queue damaged``, ``purge --dry-run``, ``threadmill_schedules`` and
``threadmill_health`` ended in some 40 lines of redis-py's frames; so did ``pause``, ``resume``
and ``forget-damaged`` with ids on a second stop signal, which do not wait for Redis, without
saying that the change may have been made. Now a read exits 130, as a shell's command ended by
Ctrl-C, saying nothing was changed; a change exits 1 saying how to see whether Redis made it.
"""

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support import ROOT, command_env

EXIT_DEADLINE_S = 60.0  # what a command may take to end on a loaded machine: a bound only
WAIT_S = 60.0  # the command's socket_timeout: it must still wait when its signals come
SCHEDULES = {"tick": {"task": "testproject.example.tasks.record_pid", "every": 60}}
OPTIONS = {"schedules": SCHEDULES, "socket_timeout": WAIT_S}
READ = "Interrupted (SIGINT) where it was: it only reads, so nothing was changed.\n"
SEE = "Interrupted twice, so the command stopped without waiting for Redis, which may have made "


@pytest.fixture
def silent_redis() -> Iterator[socket.socket]:
    """A listener that accepts connections and never answers: a Redis hung or black-holed."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(EXIT_DEADLINE_S)
        yield listener


def interrupted(
    listener: socket.socket, key_prefix: str, args: list[str], *signums: int
) -> tuple[int, str]:
    """Run ``manage.py *args`` against ``listener``, send it ``signums`` once its first call to
    Redis has gone out (it then waits for the reply), and return its exit code and stderr."""
    url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    command = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=command_env(url, key_prefix, options=OPTIONS),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    try:
        connection, _ = listener.accept()
        with connection:
            assert connection.recv(1), "the command's first call to Redis"
            for signum in signums:
                command.send_signal(signum)
            _, error = command.communicate(timeout=EXIT_DEADLINE_S)
    finally:
        command.kill()
        command.wait()
    return command.returncode, error


@pytest.mark.parametrize(
    "args",
    [
        ["threadmill_queue", "damaged", "--skip-checks"],
        ["threadmill_queue", "purge", "emails", "--dry-run", "--skip-checks"],
        ["threadmill_schedules", "--skip-checks"],
        ["threadmill_health", "--timeout", str(WAIT_S)],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_a_read_interrupted_says_nothing_was_changed_and_exits_130(
    silent_redis: socket.socket, key_prefix: str, args: list[str]
) -> None:
    assert interrupted(silent_redis, key_prefix, args, signal.SIGINT) == (130, READ)


@pytest.mark.parametrize(
    ("args", "see"),
    [
        pytest.param(
            ["pause", "emails"],
            "run 'manage.py threadmill_queue pause emails' again once Redis answers: it pauses "
            "the queue, or says it was paused already.",
            id="pause",
        ),
        pytest.param(
            ["resume", "emails"],
            "run 'manage.py threadmill_queue resume emails' again once Redis answers: it resumes "
            "the queue, or says it was not paused.",
            id="resume",
        ),
        pytest.param(
            ["forget-damaged", "emails", "t1"],
            "list the entries left with 'manage.py threadmill_queue damaged emails'.",
            id="forget-damaged",
        ),
    ],
)
def test_a_change_interrupted_twice_says_how_to_see_whether_redis_made_it(
    silent_redis: socket.socket, key_prefix: str, args: list[str], see: str
) -> None:
    args = ["threadmill_queue", *args, "--skip-checks"]
    code, error = interrupted(silent_redis, key_prefix, args, signal.SIGTERM, signal.SIGINT)
    assert (code, error.splitlines()[-1]) == (
        1,
        f"CommandError: {SEE}the change. To see whether it did, {see}",
    )
    assert "Traceback" not in error
