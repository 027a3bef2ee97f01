"""An ``aenqueue`` made by an atexit handler in a process whose asgiref sync thread announced
tasks before (a web process that enqueued while it served).

That thread ends as the interpreter shuts down and marks its pool shut down, which then refuses
work as "cannot schedule new futures after shutdown", not "... after interpreter shutdown" as a
pool whose thread never started does: ``aenqueue`` raised that RuntimeError for a task stored
in Redis, unannounced, so a caller that enqueued again made a duplicate. Run as
``python -m <this module>``, this file is that process.
"""

import json

from tests.support import run_python


def test_aenqueue_at_exit_returns_its_stored_task_once_the_sync_thread_served_before(
    redis_url: str, key_prefix: str
) -> None:
    done = run_python("-m", __name__, redis_url=redis_url, key_prefix=key_prefix)
    assert done.returncode == 0, done.stderr
    assert done.stdout, done.stderr  # the handler printed its outcome, or it raised
    before, returned, heard, args = json.loads(done.stdout)
    assert heard == [before, returned]
    assert args == ["at exit"]


def probe() -> None:
    """Aenqueue a task heard by a receiver, so asgiref's sync thread announces it; then, from
    an atexit handler, aenqueue another; print both ids, the ids the receiver heard and the
    second task's stored args."""
    import asyncio
    import atexit

    import django

    django.setup()
    from django_threadmill.compat import TaskResult, task_enqueued
    from testproject.example.tasks import echo

    heard: list[str] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        heard.append(task_result.id)

    def at_exit(before: str) -> None:
        result = asyncio.run(echo.aenqueue("at exit"))
        print(json.dumps([before, result.id, heard, echo.get_result(result.id).args]))

    task_enqueued.connect(receiver, weak=False)  # held past probe(), until the handler runs
    atexit.register(at_exit, asyncio.run(echo.aenqueue("while serving")).id)


if __name__ == "__main__":
    probe()
