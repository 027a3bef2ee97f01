"""An ``aenqueue`` made by an atexit handler, with a task_enqueued receiver connected.

At interpreter shutdown, thread pools take no more work, asgiref's sync thread included: the
hop that announces the stored task was refused, and ``aenqueue`` raised that RuntimeError
although its task was in Redis, so a caller that enqueued again made a duplicate. Run as
``python -m <this module>``, this file is that process.
"""

import json

from tests.support import run_python


def test_aenqueue_at_exit_returns_its_stored_task_and_runs_the_receivers(
    redis_url: str, key_prefix: str
) -> None:
    done = run_python("-m", __name__, redis_url=redis_url, key_prefix=key_prefix)
    assert done.returncode == 0, done.stderr
    assert done.stdout, done.stderr  # the handler printed its outcome, or it raised
    returned, heard, args = json.loads(done.stdout)
    assert heard == [returned, returned]
    assert args == ["at exit"]
    # A receiver that raises there is logged, as at a commit: its task is stored all the same.
    assert (
        "Signal receiver failed receiver=__main__.probe.<locals>.failing_receiver "
        "signal=task_enqueued" in done.stderr
    )
    assert f"task_id={returned}\nTraceback" in done.stderr
    assert "ValueError: the receiver failed" in done.stderr


def probe() -> None:
    """From an atexit handler, aenqueue a task heard by two sync receivers, one of which
    raises; print the id returned, the ids the receivers heard and the task's stored args."""
    import asyncio
    import atexit

    import django

    django.setup()
    from django_threadmill.compat import TaskResult, task_enqueued
    from testproject.example.tasks import echo

    heard: list[str] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        heard.append(task_result.id)

    def failing_receiver(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        heard.append(task_result.id)
        raise ValueError("the receiver failed")

    def at_exit() -> None:
        result = asyncio.run(echo.aenqueue("at exit"))
        print(json.dumps([result.id, heard, echo.get_result(result.id).args]))

    task_enqueued.connect(receiver, weak=False)  # held past probe(), until the handler runs
    task_enqueued.connect(failing_receiver, weak=False)
    atexit.register(at_exit)


if __name__ == "__main__":
    probe()
