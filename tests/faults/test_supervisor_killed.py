"""A SIGKILLed supervisor: its worker processes notice, stop gracefully, and leave no orphans."""

import re
import socket
import textwrap
from pathlib import Path

from django_threadmill.broker import Broker
from django_threadmill.broker.inspect import Inspector
from django_threadmill.management.health import host_heartbeats
from tests.support import Command, wait_until, worker


def alive(pid: int) -> bool:
    """Tell whether ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_worker_processes_stop_when_the_supervisor_is_killed(
    redis_url: str, key_prefix: str
) -> None:
    command = worker(redis_url, key_prefix, "--processes", "2")
    try:
        command.wait_for_log(r"(?s)Worker process started.*Worker process started")
        children = command.child_pids()
        command.process.kill()
        command.process.wait()
        wait_until(lambda: not any(alive(pid) for pid in children), "the children exiting", 20)
        assert len(re.findall(r"Stopping on supervisor exit", command.log)) == 2
    finally:
        command.close()


# threadmill_worker with argv[1:], its supervisor deaf to what its processes say: a supervisor
# killed before it read what they said (each says when Redis took its first renewal).
DEAF_SUPERVISOR = textwrap.dedent(
    """
    import sys

    import django

    django.setup()

    from django.core.management import execute_from_command_line

    from django_threadmill.worker import slots

    def deaf(slot):
        slot.listening = False
        return b""

    slots.Slot.hear = deaf
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_worker_processes_stop_when_the_supervisor_dies_with_what_they_said_unread(
    redis_url: str, key_prefix: str, broker: Broker
) -> None:
    """Each process tells its supervisor when Redis took its first renewal; a supervisor
    killed before it read that closes its end with data unread, and the process's next read
    of the control socket meets ECONNRESET, not an end of file. It failed the process with a
    traceback ("Worker process failed, exiting") instead of stopping it."""
    command = Command(redis_url, key_prefix, "--processes", "2", code=DEAF_SUPERVISOR)
    try:
        command.wait_for_log(r"(?s)Worker process started.*Worker process started")
        children = command.child_pids()
        inspector, host = Inspector(broker), socket.gethostname()
        wait_until(
            lambda: len(host_heartbeats(inspector, ["default"], host, 60_000).live) == 2,
            "both processes renewed, each telling the supervisor, which does not read it",
        )
        command.process.kill()
        command.process.wait()
        wait_until(lambda: not any(alive(pid) for pid in children), "the children exiting", 20)
        assert len(re.findall(r"Stopping on supervisor exit", command.log)) == 2
        assert "Traceback" not in command.log
    finally:
        command.close()
