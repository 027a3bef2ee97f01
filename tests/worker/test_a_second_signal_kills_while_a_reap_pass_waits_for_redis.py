"""A second stop signal kills the worker processes at once while the supervisor waits out the
grace a reap pass gets after the first (docs/worker.md, Signals reach the main thread).

After the first signal the supervisor gives an unanswered reap pass a grace to end between two
rounds. It waited out that grace with the second signal heard but not acted on: the kill came
only once the grace was over, a second later, where everywhere else a second signal kills at
once. The grace is made an hour here: only the second signal may end the wait.
"""

import signal
import textwrap
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from tests.support import Command, wait_until
from tests.worker import tasks

# threadmill_worker with argv[1:], whose reap passes after the first never get an answer (a
# Redis that stopped answering the supervisor), with a grace of an hour for them after a stop.
SILENT_REAP_PASSES = textwrap.dedent(
    """
    import signal
    import sys
    import threading

    import django

    django.setup()

    from django.core.management import execute_from_command_line

    from django_threadmill.worker import chores, reap_hold

    # SIGINT as a terminal's command has it: a background job (a CI runner's) inherits it
    # ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    chores.PASS_GRACE_S = 3600.0
    reap_pass, passes = reap_hold.reap_pass, []

    def silent_after_the_first(*args, **kwargs):
        passes.append(args)
        if len(passes) > 1:
            print("Reap pass waits for a silent Redis", file=sys.stderr, flush=True)
            threading.Event().wait()
        return reap_pass(*args, **kwargs)

    reap_hold.reap_pass = silent_after_the_first
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_second_signal_kills_at_once_while_a_reap_pass_waits_for_redis(
    signum: signal.Signals,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    release = tmp_path / "release"  # made at the end: a process left behind ends its task
    running = tasks.wait_for_file.enqueue(str(release))
    worker = Command(
        redis_url,
        key_prefix,
        "--skip-checks",
        "--processes", "1",
        "--grace-period", "3600",
        "--reap-interval", "0.05",
        code=SILENT_REAP_PASSES,
    )  # fmt: skip
    try:
        wait_until(lambda: running.refresh() or running.status == "RUNNING", "the task running")
        worker.wait_for_log("Reap pass waits for a silent Redis")
        worker.signal(signum)
        worker.wait_for_log("Stopping worker processes count=1")
        worker.signal(signum)
        assert worker.wait() == 1, worker.log
        log = worker.log
    finally:
        release.touch()
        worker.close()

    assert "Second signal: killing worker processes count=1" in log
    assert "Stopping without waiting for Redis call=reap" in log
    assert "Supervisor stopped exit_code=1" in log
