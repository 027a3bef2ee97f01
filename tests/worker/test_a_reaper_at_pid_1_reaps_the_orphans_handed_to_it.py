"""``threadmill_reap`` run as PID 1 of a container with no init is handed every orphan in the
container: the background job of a shell ``docker exec`` or ``kubectl exec`` started and left,
a daemon a ``task_enqueued`` receiver of its passes started. It never waited for them, and each
stayed a zombie holding its pid for the life of the container; it now waits for them after
each pass, when none of its own code waits for a child (docs/deploy.md, Docker image).

The command runs under ``unshare --pid --fork --mount-proc``, as a container runs it; the
orphan comes from a shell ``nsenter`` starts in its namespace, as ``docker exec`` does.
"""

import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support import release_fifo, wait_until
from tests.worker.pid_namespace import at_pid_1, children, needs_pid_namespaces, pid_1

pytestmark = [
    needs_pid_namespaces,
    pytest.mark.skipif(shutil.which("nsenter") is None, reason="no nsenter (util-linux) on PATH"),
]


def test_an_orphan_a_shell_left_is_waited_for(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    os.mkfifo(release)
    command = at_pid_1(redis_url, key_prefix, "threadmill_reap", "--interval", "0.1")
    try:
        command.wait_for_log(r"Reaper started ")
        reaper = pid_1(command)
        # The shell exits at once; its job, waiting for the FIFO, is handed to PID 1.
        left = f"cat {shlex.quote(str(release))} & exit 0"
        nsenter = ["nsenter", "--target", str(reaper), "--pid", "--", "sh", "-c", left]
        subprocess.run(nsenter, stdout=subprocess.DEVNULL, check=True)
        wait_until(lambda: children(reaper), "the shell's job handed to the reaper")
        [orphan] = children(reaper)
        wait_until(lambda: release_fifo(release), "the orphan opening the FIFO")

        wait_until(lambda: orphan not in children(reaper), "the orphan waited for", timeout_s=30)
        os.kill(reaper, signal.SIGTERM)  # as docker stop: from outside the namespace
        assert command.wait() == 0, command.log
        assert "Reaper stopped " in command.log
    finally:
        command.close()
