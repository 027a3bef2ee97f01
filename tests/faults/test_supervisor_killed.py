"""A SIGKILLed supervisor: its worker processes notice, stop gracefully, and leave no orphans."""

import re
from pathlib import Path

from tests.support import wait_until, worker


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
