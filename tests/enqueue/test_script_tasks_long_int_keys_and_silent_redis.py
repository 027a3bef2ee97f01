"""Enqueue edges: a task defined in the script being run, a dict key too long to write, and an
aenqueue to a Redis that went silent; each fails without delay and says why."""

import asyncio
import re
from collections.abc import Callable, Iterator

import pytest
import redis

from django_threadmill.exceptions import MaybeApplied
from testproject.example.tasks import echo
from tests.faults.support import paused
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import run_python

# A script that declares a task at its own top level, then enqueues it every way there is.
SCRIPT = """
import asyncio
import django
django.setup()
from django_threadmill.compat import InvalidTask, task, task_backends

@task
def greet(name):
    return name

for enqueue in (
    lambda: greet.enqueue("ada"),
    lambda: asyncio.run(greet.aenqueue("ada")),
    lambda: task_backends["default"].enqueue_many(greet, [(("ada",), {})]),
):
    try:
        enqueue()
    except InvalidTask as refused:
        print(refused)
    else:
        print("stored")
"""


def keys_of(redis_client: redis.Redis, key_prefix: str) -> list[str]:
    return list(redis_client.scan_iter(f"{key_prefix}:*"))


def test_a_task_defined_in_the_script_being_run_is_refused_at_enqueue(
    redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    """Its path, __main__.greet, imported in the script; stored, every attempt failed in the
    worker, whose __main__ is its own command (TaskNotImportable)."""
    ran = run_python("-c", SCRIPT, redis_url=redis_url, key_prefix=key_prefix)
    assert ran.returncode == 0, ran.stderr
    message = (
        "Task '__main__.greet' is defined in the script or shell being run (module __main__), "
        "so no worker could run it: a worker's __main__ is its own command. Define the task "
        "in a module of your project, e.g. myapp/tasks.py, and import it from there."
    )
    assert ran.stdout.splitlines() == [message] * 3
    assert keys_of(redis_client, key_prefix) == []


@pytest.mark.parametrize(
    "enqueue",
    [echo.enqueue, lambda value: asyncio.run(echo.aenqueue(value))],
    ids=["enqueue", "aenqueue"],
)
@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({10**5000: 1}, "args[0] has a key that is an int of about 5000 digits"),
        ({"rows": {(1, 10**5000): 1}}, "args[0]['rows'] has a key that is a tuple"),
    ],
    ids=["int-key", "tuple-key"],
)
def test_a_key_too_long_to_write_is_named_by_its_place(
    redis_client: redis.Redis,
    key_prefix: str,
    enqueue: Callable[[object], object],
    value: object,
    where: str,
) -> None:
    """Naming the key raised: a bare ValueError "Exceeds the limit (4300 digits)" came out of
    the message, in place of the TypeError saying where the key is and what to pass."""
    message = (
        "Arguments of task 'testproject.example.tasks.echo' cannot be stored as JSON: "
        f"{where}, not a JSON key ("
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}") as raised:
        enqueue(value)
    assert str(raised.value).endswith(
        "Pass strings, numbers, booleans, None, lists and dicts with string keys only."
    )
    assert keys_of(redis_client, key_prefix) == []


@pytest.fixture(scope="module")
def silenced_redis() -> Iterator[RedisProcess]:
    with redis_process() as server:
        yield server


@pytest.fixture
def redis_url(silenced_redis: RedisProcess) -> str:
    return silenced_redis.url


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"socket_timeout": 0.2}


def connections_opened(server: RedisProcess, during: Callable[[], None]) -> int:
    """Return how many connections were made to ``server`` while ``during`` ran, paused.

    A paused Redis still completes the TCP handshake (the kernel does, into its listen
    backlog), so each connect succeeds and waits on its first reply. Once it goes on, Redis
    accepts that backlog in one go, the connection opened here to ask last among it, so the
    count it then gives is whole.
    """
    with redis.Redis.from_url(server.url) as client:
        before = int(client.info("stats")["total_connections_received"])
        with paused(server):
            during()
    with redis.Redis.from_url(server.url) as client:
        return int(client.info("stats")["total_connections_received"]) - before - 1


@pytest.mark.parametrize(
    ("warm_up", "opened"),
    [(False, 1), (True, 0)],
    ids=["fresh-loop", "open-connection"],
)
def test_an_aenqueue_to_a_silent_redis_is_not_tried_again(
    silenced_redis: RedisProcess, warm_up: bool, opened: int
) -> None:
    """A timeout was tried again on a fresh connection, by connect() and around the call:
    four connections from a fresh loop, two calls from an open one, each waiting
    socket_timeout, where enqueue waits one (docs/enqueue.md, What each error means, and
    what was written)."""
    with asyncio.Runner() as runner:  # one loop: its connection stays open between calls
        if warm_up:
            runner.run(echo.aenqueue("opens the loop's connection"))

        def aenqueue() -> None:
            with pytest.raises(MaybeApplied, match=r"\(Timeout reading from "):
                runner.run(echo.aenqueue("sent to the paused Redis"))

        assert connections_opened(silenced_redis, aenqueue) == opened
