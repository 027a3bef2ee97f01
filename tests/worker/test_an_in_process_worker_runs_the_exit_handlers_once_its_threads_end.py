"""--processes 0: the command ends its process as Python does (its exit handlers run: coverage's
data file, a tracer's last spans) when the threads left end at once, as an idle thread pool's
do; only one that still runs past a bound (a task given up on) is left behind with os._exit.

An async task that called ``sync_to_async(..., thread_sensitive=False)`` left a pool's idle
thread, and every such run ended with os._exit: no exit handler ran, though the docs name a
coverage run as a use of ``--processes 0``.
"""

import textwrap

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.worker import async_tasks
from tests.worker.support import run_script


def test_exit_handlers_run_when_an_async_task_left_a_pools_idle_thread(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    result = async_tasks.connects_off_the_orm_thread.enqueue()
    script = textwrap.dedent(
        """
        import atexit, sys
        from django.core.management import execute_from_command_line

        atexit.register(lambda: print("exit handlers ran", file=sys.stderr, flush=True))
        execute_from_command_line(
            ["manage.py", "threadmill_worker", "--processes", "0", "--burst", "--skip-checks"]
        )
        """
    )
    completed = run_script(script, redis_url, key_prefix)

    assert completed.returncode == 0, completed.stderr
    assert backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert completed.stderr.endswith("exit handlers ran\n"), completed.stderr
