"""A stop signal that comes as ``--processes 0`` hands over from the supervisor's first pass to
the worker stops the worker, as at any other time.

The supervisor's handlers were put back before the worker set its own: a SIGTERM in between met
the default action and killed the command (exit -15), with no line said. Here the signal is sent
at that moment: as the worker is built.
"""

import signal
import textwrap

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command

from . import tasks

SIGNALLED_AS_THE_WORKER_IS_BUILT = textwrap.dedent(
    """
    import os
    import signal
    import sys

    from django.core.management import execute_from_command_line
    from django_threadmill.worker import supervisor

    class Signalled(supervisor.WorkerProcess):
        def __init__(self, *args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)
            super().__init__(*args, **kwargs)

    supervisor.WorkerProcess = Signalled
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_a_sigterm_as_the_worker_is_built_stops_it_gracefully(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    waiting = tasks.pid.enqueue()
    command = Command(
        redis_url,
        key_prefix,
        *("--processes", "0", "--burst", "--threads", "2"),
        code=SIGNALLED_AS_THE_WORKER_IS_BUILT,
    )
    try:
        code = command.wait(60)
        log = command.log
    finally:
        command.close()
    assert code == 0, f"exit {code} (-{signal.SIGTERM} is killed by the signal):\n{log}"
    assert "Stopping on SIGTERM" in log
    waiting.refresh()
    assert waiting.status == TaskResultStatus.READY  # not reserved: nothing for the reaper
