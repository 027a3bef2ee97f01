"""The event loop lane's upkeep: its beat, and the database connections of its async tasks.

Each test runs the real command in a script that watches the part under test.
"""

import re
import textwrap
from collections import Counter

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import async_add
from tests.worker import async_tasks
from tests.worker.support import run_script


def test_the_event_loop_keeps_one_beat_however_often_it_runs_dry(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """Each time the loop went from no task to one, it started another beat that ran every
    50 ms for as long as tasks ran: a backlog run one at a time piled them up (10,000 tasks
    made a million beats and took 10 s instead of 2)."""
    results = backend.enqueue_many(async_add, [((n, 1), {}) for n in range(500)])
    script = textwrap.dedent(
        """
        import asyncio, sys
        import django_threadmill.worker.event_loop as event_loop
        from django.core.management import execute_from_command_line

        beat, call_later = event_loop.EventLoopLane._beat, asyncio.BaseEventLoop.call_later
        pending, most = [0], [0]

        def watched_beat(self):
            pending[0] -= 1
            beat(self)

        def watched_call_later(self, delay, callback, *args, **kwargs):
            if getattr(callback, "__func__", None) is watched_beat:
                pending[0] += 1
                if pending[0] > most[0]:
                    # Said as it happens: the command may end the process with os._exit (a
                    # thread left behind), past any code after it.
                    most[0] = pending[0]
                    print(f"beats pending at most={most[0]}", file=sys.stderr, flush=True)
            return call_later(self, delay, callback, *args, **kwargs)

        event_loop.EventLoopLane._beat = watched_beat
        asyncio.BaseEventLoop.call_later = watched_call_later
        execute_from_command_line(
            ["manage.py", "threadmill_worker", "--processes", "0", "--burst",
             "--async-concurrency", "1"]
        )
        """
    )
    completed = run_script(script, redis_url, key_prefix)
    assert completed.returncode == 0, completed.stderr
    said = re.findall(r"^beats pending at most=(\d+)$", completed.stderr, re.MULTILINE)
    assert said == ["1"], completed.stderr
    for result in results:
        result.refresh()
    assert Counter(r.status for r in results) == {TaskResultStatus.SUCCESSFUL: 500}


def test_the_connections_async_tasks_opened_are_closed_when_the_process_stops(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """With CONN_MAX_AGE set, the connection the async ORM opened in asgiref's thread outlived
    every task, and the process exited without closing it (the database logs an unexpected
    EOF), where a worker thread closes its own as it ends."""
    connects = async_tasks.connects_in_the_orm_thread.enqueue()
    script = textwrap.dedent(
        """
        import sys, threading, django
        django.setup()
        from django.conf import settings
        from django.core.management import execute_from_command_line
        from django.db.backends.signals import connection_created
        from django.db.backends.sqlite3.base import DatabaseWrapper

        settings.DATABASES["default"]["CONN_MAX_AGE"] = None  # persistent connections

        def say(what):
            print(f"{what} in={threading.current_thread().name}", file=sys.stderr, flush=True)

        connection_created.connect(lambda sender, **kwargs: say("opened"), weak=False)
        close = DatabaseWrapper.close

        def watched_close(self):
            if self.connection is not None:
                say("closed")
            close(self)

        DatabaseWrapper.close = watched_close
        execute_from_command_line(
            ["manage.py", "threadmill_worker", "--processes", "0", "--burst", "-v", "0"]
        )
        """
    )
    completed = run_script(script, redis_url, key_prefix)
    assert completed.returncode == 0, completed.stderr
    assert backend.get_result(connects.id).status == TaskResultStatus.SUCCESSFUL
    opened = re.findall(r"^opened in=(.+)$", completed.stderr, re.MULTILINE)
    closed = re.findall(r"^closed in=(.+)$", completed.stderr, re.MULTILINE)
    assert opened, completed.stderr
    assert closed == opened, completed.stderr
