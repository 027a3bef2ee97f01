"""``threadmill_worker --processes 0`` run as PID 1 of a container with no init has no
supervisor to wait for the orphans the kernel hands it: a daemon a task started with a double
fork stays a zombie holding its pid until the burst ends, one per such task. Nothing can wait
for them there: the tasks' threads share the process, and waiting for an ended child of its
own would take the exit code of a subprocess a task waits for (``subprocess.run`` then reads
0). The command said nothing of it; it now logs a WARNING at start naming the fix: processes,
whose supervisor waits for them, or an init (docs/deploy.md, Docker image).

The command runs under ``unshare --pid --fork --mount-proc``, as a container runs it.
"""

import re
from pathlib import Path

from tests.support import wait_until
from tests.worker import tasks
from tests.worker.pid_namespace import (
    at_pid_1,
    leaves_orphans,
    needs_pid_namespaces,
    pid_1,
    zombies,
)

TASKS = 5

pytestmark = needs_pid_namespaces

WARNING = (
    "Orphans left unreaped pid=1 processes=0: as PID 1 with no init, this process is "
    "handed every orphan a task leaves (a daemon it started, a subprocess it never waited "
    "for), and each stays a zombie holding a pid until the command exits. It cannot wait for "
    "them while tasks run beside it: it would take the exit codes of the subprocesses they "
    "wait for. Use --processes 1 or more, whose supervisor waits for them, or start the "
    "command under an init (docker run --init, tini)."
)


def test_the_warning_names_the_fix_for_the_zombies_it_leaves(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    results = [leaves_orphans.enqueue() for _ in range(TASKS)]
    held = tasks.wait_for_file.enqueue(str(release))  # keeps the burst, and its zombies, alive
    command = at_pid_1(
        redis_url, key_prefix, "threadmill_worker", "--processes", "0", "--burst", "--threads", "2"
    )
    try:
        command.wait_for_log(r"Worker process started ")
        for result in results:
            wait_until(lambda result=result: result.refresh() or result.is_finished, "a task")
        assert {result.status.name for result in results} == {"SUCCESSFUL"}
        worker = pid_1(command)
        # The daemons, one per task: what the warning says.
        wait_until(lambda: len(zombies(worker)) >= TASKS, "the daemons left as zombies")

        release.touch()
        assert command.wait() == 0, command.log
        held.refresh()
        assert held.status.name == "SUCCESSFUL"
        assert re.search(
            rf"WARNING django_threadmill\.worker\.orphans .* {re.escape(WARNING)}\n", command.log
        )
    finally:
        command.close()
