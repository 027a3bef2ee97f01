"""An enqueue made by a signal handler that runs in the middle of its thread's own enqueue.

A SIGTERM handler that enqueues a follow-up (a command that checkpoints its work as it is told
to stop) runs in the main thread, between two bytecodes of whatever it was doing: often an
enqueue, blocked on its round trip. The handler's enqueue joined the line that very thread
held, and waited for it forever; the process hung until it was killed, and neither task was
written. Run as ``python -m <this module>``, this file is that process.
"""

import json
import signal

from tests.support import run_python


def test_a_handler_that_enqueues_mid_enqueue_stores_both_tasks(
    redis_url: str, key_prefix: str
) -> None:
    done = run_python("-m", __name__, redis_url=redis_url, key_prefix=key_prefix)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["interrupted"], ["from the handler"]]


def probe() -> None:
    """Raise SIGUSR1 while the main thread's enqueue waits for its reply, with a handler that
    enqueues; print the arguments each of the two tasks reads back with."""
    import django

    django.setup()
    from redis.connection import Connection

    from testproject.example.tasks import echo

    raised: list[bool] = []
    handled: list[str] = []

    def handler(signum: int, frame: object) -> None:
        handled.append(echo.enqueue("from the handler").id)

    read_response = Connection.read_response

    def signalled_once(self: Connection, *args: object, **kwargs: object) -> object:
        if not raised:
            raised.append(True)
            signal.raise_signal(signal.SIGUSR1)  # the handler runs here, before the read
        return read_response(self, *args, **kwargs)

    signal.signal(signal.SIGUSR1, handler)
    Connection.read_response = signalled_once  # type: ignore[method-assign]
    interrupted = echo.enqueue("interrupted")
    print(json.dumps([echo.get_result(task_id).args for task_id in [interrupted.id, *handled]]))


if __name__ == "__main__":
    probe()
