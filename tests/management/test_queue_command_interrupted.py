"""threadmill_queue's changes interrupted (Ctrl-C, SIGTERM) while Redis makes them.

Before, a SIGINT that came while ``forget-damaged --all`` waited for a batch's reply ended it
there: Redis dropped the batch all the same, and it was never listed (the message said it "may
be"); a SIGTERM killed the command without a word. ``pause`` and ``resume`` ended so with a
KeyboardInterrupt traceback, or no word, whether or not their write had gone out. Now the
signal waits until what was done is said (the batch on its way is listed), then the command
exits 1 saying so; a second one stops it at once.

The signal lands while the call is on its way: Redis is paused (SIGSTOP) with the command's
request unread, and runs it once it goes on (SIGCONT).
"""

import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from tests.faults.support import paused, request_unread_from, waiting_on_paused
from tests.management.test_queue_command_output_cut_short import PLANTED, interruptible, plant
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import ROOT, command_env, wait_until

EXIT_DEADLINE_S = 60.0  # what a command may take to end on a loaded machine: a bound only
BATCH = 1000  # DamagedRecords.MAX_LISTED
KEPT = "The rest are kept: 'manage.py threadmill_queue damaged default' lists them.\n"
SIGNALS = [signal.SIGINT, signal.SIGTERM]


@dataclass(frozen=True)
class Ended:
    code: int | None
    listed: list[str]  # stdout's lines
    error: str


def queue_command(server: RedisProcess, key_prefix: str, *args: str) -> subprocess.Popen[str]:
    """Start ``threadmill_queue args`` on ``server``, Ctrl-C reaching it as from a terminal."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "threadmill_queue", *args, "--skip-checks"],
        cwd=ROOT,
        env=command_env(server.url, key_prefix),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )


def forget_all_signalled(
    server: RedisProcess, key_prefix: str, *signums: int, ends_without_redis: bool = False
) -> Ended:
    """Run ``forget-damaged default --all`` and send it ``signums`` while its second batch's
    call waits, unread, on the paused ``server``; Redis goes on after them, or once the
    command ended if ``ends_without_redis``. Return how the command ended.

    The first batch (about 370 KB of lines) fills the stdout pipe: the command waits there
    while Redis is paused, then its output is read, and it sends the next call.
    """
    command = queue_command(server, key_prefix, "forget-damaged", "default", "--all")
    try:
        assert command.stdout is not None
        with ThreadPoolExecutor(1, "test-output-reader") as reader:
            first = os.read(command.stdout.fileno(), 1).decode()  # communicate reads the rest
            with paused(server):
                outputs = reader.submit(command.communicate)
                wait_until(
                    lambda: request_unread_from(command.pid, server.port),
                    "the second batch's call waiting on the paused Redis",
                )
                for signum in signums:
                    command.send_signal(signum)
                if ends_without_redis:
                    outputs.result(EXIT_DEADLINE_S)
            listed, error = outputs.result(EXIT_DEADLINE_S)
    finally:
        command.kill()
        command.wait()
    # What it says after its audit line (Damaged records forgotten ... incomplete=yes).
    said = error.partition(" incomplete=yes\n")[2]
    return Ended(command.returncode, (first + listed).splitlines(), said)


def listed_ids(ended: Ended) -> set[str]:
    return {line.split()[1].removeprefix("id=") for line in ended.listed}


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_forget_all_lists_the_batch_a_stop_signal_came_for_then_stops(
    backend: ThreadmillTaskBackend, key_prefix: str, signum: signal.Signals
) -> None:
    with redis_process() as server, redis.Redis.from_url(server.url) as client:
        key = plant(backend, client, "default", PLANTED)
        ended = forget_all_signalled(server, key_prefix, signum)
        kept = {field.decode() for field in client.hkeys(key)}
    assert (ended.code, ended.error) == (
        1,
        f"CommandError: Forgot {2 * BATCH} damaged record(s) of queue default, then stopped: "
        f"{signum.name} came, and each one dropped is listed above. {KEPT}",
    )
    assert len(ended.listed) == 2 * BATCH  # the batch the signal came for too
    assert listed_ids(ended) == {f"t{n}@default" for n in range(PLANTED)} - kept


def test_a_second_stop_signal_ends_forget_all_without_waiting_for_redis(
    backend: ThreadmillTaskBackend, key_prefix: str
) -> None:
    """For a Redis that never answers: the batch on its way may be dropped unlisted, as said."""
    with redis_process() as server, redis.Redis.from_url(server.url) as client:
        plant(backend, client, "default", PLANTED)
        ended = forget_all_signalled(
            server, key_prefix, signal.SIGTERM, signal.SIGINT, ends_without_redis=True
        )
    assert (ended.code, ended.error) == (
        1,
        f"CommandError: Forgot {BATCH} damaged record(s) of queue default, then stopped: "
        f"interrupted twice; a batch being dropped then may be dropped unlisted too. {KEPT}",
    )
    assert len(ended.listed) == BATCH


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_resume_interrupted_while_it_waits_on_redis_says_it_resumed(
    backend: ThreadmillTaskBackend, key_prefix: str, signum: signal.Signals
) -> None:
    with redis_process() as server, redis.Redis.from_url(server.url) as client:
        key = backend.broker.queue_keys("default").paused
        client.set(key, "1700000000000 ops@host: deploy")
        command = queue_command(server, key_prefix, "resume", "default")
        try:
            with waiting_on_paused(server, command):
                command.send_signal(signum)
            listed, error = command.communicate(timeout=EXIT_DEADLINE_S)
        finally:
            command.kill()
            command.communicate()  # its pipes closed too: left open, a later test was failed
        still_paused = client.exists(key)
    assert (command.returncode, listed) == (
        1,
        "Resumed queue default of backend default: idle workers were woken to take its tasks.\n",
    )
    assert error.endswith(  # after the log line "Queue resumed ..."
        f"\nCommandError: Stopped on {signum.name}, which came while the command was at work: "
        "what it did is said above.\n"
    )
    assert not still_paused
