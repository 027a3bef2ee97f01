"""A stop signal that comes as ``--processes 0`` hands over from the supervisor's first pass to
the worker stops the worker, as at any other time.

The supervisor's handlers were put back to the defaults before the worker set its own: a SIGTERM
in between killed the command (exit -15), with no line said. Here the signal is sent at two
moments of that handover: as the first pass returns, and as the worker is built.
"""

import signal
import textwrap

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command

from . import tasks

SIGNALLED_AT = textwrap.dedent(
    """
    import os
    import signal
    import sys

    from django.core.management import execute_from_command_line
    from django_threadmill.worker import supervisor

    moment = sys.argv.pop(1)

    def signalled_after(call, at):
        def wrapped(*args, **kwargs):
            returned = call(*args, **kwargs)
            if moment == at:
                os.kill(os.getpid(), signal.SIGTERM)
            return returned
        return wrapped

    supervisor.Supervisor._first_pass = signalled_after(
        supervisor.Supervisor._first_pass, "first pass"
    )
    supervisor.WorkerProcess.__init__ = signalled_after(
        supervisor.WorkerProcess.__init__, "built"
    )
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


@pytest.mark.parametrize("moment", ["first pass", "built"])
def test_a_sigterm_as_the_worker_takes_over_stops_it_gracefully(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, moment: str
) -> None:
    waiting = tasks.pid.enqueue()
    command = Command(
        redis_url,
        key_prefix,
        *(moment, "--processes", "0", "--burst", "--threads", "2"),
        code=SIGNALLED_AT,
    )
    try:
        code = command.wait(60)
        log = command.log
    finally:
        command.close()
    assert code == 0, f"exit {code} (-{signal.SIGTERM} is killed by the signal):\n{log}"
    assert "Stopping on a signal heard as it started" in log
    waiting.refresh()
    assert waiting.status == TaskResultStatus.READY  # not run, not reserved: none for the reaper
