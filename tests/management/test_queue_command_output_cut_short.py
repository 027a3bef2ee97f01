"""threadmill_queue whose output is cut short: a reader gone (``| head``), Ctrl-C, Redis failing.

Before, ``damaged | head`` ended in a BrokenPipeError traceback, and ``forget-damaged --all``
dropped every entry of the list before printing the first: cut short (``| head -2``, Ctrl-C, a
Redis failing on the thousandth batch) it had dropped hundreds of thousands nobody saw, and
Redis failing midway said "nothing was written". Now each batch is listed before the next is
dropped, and a stop says how many were dropped.
"""

import os
import signal
import subprocess
import sys
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable
from tests.management.test_health_and_queue_commands_edges import HOW, cut_short
from tests.support import ROOT, command_env

ENTRY = "1700000000000 acquire: its key holds no hash " + "x" * 300  # a long line each
PLANTED = 3000  # three batches of MAX_LISTED (1,000)


def plant(backend: ThreadmillTaskBackend, client: redis.Redis, queue: str, count: int) -> str:
    """Set ``count`` entries aside in ``queue``'s damaged list; return its key."""
    key = backend.broker.queue_keys(queue).damaged
    client.hset(key, mapping={f"t{n}@{queue}": ENTRY for n in range(count)})
    return key


def queue_command(
    redis_url: str, key_prefix: str, how: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """Run ``threadmill_queue args`` with a stdout no line can be written to, as ``how`` says."""
    return cut_short(how, command_env(redis_url, key_prefix), "threadmill_queue", *args)


@pytest.mark.parametrize("how", HOW)
def test_forget_all_stops_dropping_where_its_output_is_closed(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    how: str,
) -> None:
    key = plant(backend, redis_client, "default", PLANTED)
    cut = queue_command(redis_url, key_prefix, how, "forget-damaged", "default", "--all")
    assert (cut.returncode, cut.stderr.partition(" incomplete=yes\n")[2]) == (  # after the log
        1,
        "CommandError: Forgot 1000 damaged record(s) of queue default, then stopped: the "
        "output was closed, so the last of them may not show. The rest are kept: 'manage.py "
        "threadmill_queue damaged default' lists them.\n",
    )
    assert redis_client.hlen(key) == PLANTED - 1000


@pytest.mark.parametrize("how", HOW)
def test_a_listing_whose_output_is_closed_exits_1_without_a_traceback(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    how: str,
) -> None:
    plant(backend, redis_client, "default", 1)
    cut = queue_command(redis_url, key_prefix, how, "damaged")
    assert (cut.returncode, cut.stderr) == (1, "")


def interruptible() -> None:
    """Let Ctrl-C reach the command as from a terminal: a shell's background job (a CI
    runner's ``cmd &``) starts with SIGINT ignored, and Python keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_forget_all_interrupted_midway_keeps_the_batches_not_listed(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    """Ctrl-C while the first batch is printed (its reader waits: the pipe is full): the
    batch is listed to its end, and no other is dropped (test_queue_command_interrupted.py
    has Ctrl-C while a batch's call is on its way)."""
    key = plant(backend, redis_client, "default", PLANTED)
    command = subprocess.Popen(
        [sys.executable, "manage.py", "threadmill_queue", "forget-damaged", "default", "--all"],
        cwd=ROOT,
        env=command_env(redis_url, key_prefix),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    try:
        assert command.stdout is not None
        first = os.read(command.stdout.fileno(), 1).decode()  # communicate reads the rest
        command.send_signal(signal.SIGINT)
        listed, error = command.communicate(timeout=60)
    finally:
        command.kill()
        command.wait()
    assert command.returncode == 1
    assert error.partition(" incomplete=yes\n")[2] == (  # after the audit line
        "CommandError: Forgot 1000 damaged record(s) of queue default, then stopped: SIGINT "
        "came, and each one dropped is listed above. The rest are kept: 'manage.py "
        "threadmill_queue damaged default' lists them.\n"
    )
    assert len((first + listed).splitlines()) == 1000
    assert redis_client.hlen(key) == PLANTED - 1000


def test_redis_failing_midway_says_what_was_dropped_and_listed(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: nothing listed, and Redis's error said "nothing was written"."""
    monkeypatch.setattr(backend.broker, "MAX_LISTED", 2)
    key = plant(backend, redis_client, "emails", 5)
    run = backend.broker._run
    calls: list[object] = []

    def fail_the_third(call: Any, **options: Any) -> Any:
        calls.append(call)
        if len(calls) == 3:
            raise BrokerUnavailable("Redis at x is unreachable (gone). Start Redis.")
        return run(call, **options)

    monkeypatch.setattr(backend.broker, "_run", fail_the_third)
    listed = StringIO()
    with pytest.raises(CommandError) as stopped:
        call_command("threadmill_queue", "forget-damaged", "emails", "--all", stdout=listed)

    assert str(stopped.value) == (
        "Forgot 4 damaged record(s) of queue emails, then stopped: those listed above; the "
        "next batch failed: Redis at x is unreachable (gone). Start Redis. The rest are kept: "
        "'manage.py threadmill_queue damaged emails' lists them."
    )
    assert len(listed.getvalue().splitlines()) == 4
    assert redis_client.hlen(key) == 1
