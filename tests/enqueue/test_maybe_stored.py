"""An enqueue that fails but may have been applied names the ids of its tasks.

Its caller gets no TaskResult, and enqueuing again makes a new task with a new id. The error
once said to check ``get_result(id)`` without naming the id (and, unconfirmed per
OPTIONS['durability'], that the call could be retried): a retry stored the task twice.
"""

import asyncio
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task, TaskResultDoesNotExist
from django_threadmill.exceptions import MaybeApplied
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import redis_process
from tests.support import wait_until

# The test Redis has no replica: each write waits this long for one, then fails unconfirmed.
UNCONFIRMED = {"durability": "replicated", "durability_timeout": 0.2}

type Enqueue = Callable[..., object]


def advice(task_id: str) -> str:
    return (
        f"Task {task_id!r} may be stored: check get_result({task_id!r}) before enqueuing it "
        "again, since a new enqueue is a new task."
    )


@pytest.fixture(params=["enqueue", "aenqueue"])
def enqueue(request: pytest.FixtureRequest) -> Enqueue:
    def through(task: Task, *args: object) -> object:
        if request.param == "enqueue":
            return task.enqueue(*args)
        return asyncio.run(task.aenqueue(*args))

    return through


@pytest.mark.parametrize("tasks_options", [UNCONFIRMED])
def test_an_unconfirmed_enqueue_names_its_task(
    backend: ThreadmillTaskBackend, enqueue: Enqueue
) -> None:
    with pytest.raises(MaybeApplied) as raised:
        enqueue(echo, "charge card 42")
    [task_id] = raised.value.task_ids
    assert str(raised.value).endswith(
        "raise OPTIONS['durability_timeout']. A failover now could lose it. " + advice(task_id)
    )
    # What the message says to do finds the task: the write was applied, only not confirmed.
    assert backend.get_result(task_id).args == ["charge card 42"]


@pytest.mark.parametrize("tasks_options", [UNCONFIRMED])
def test_an_unconfirmed_enqueue_many_names_its_tasks(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(MaybeApplied) as raised:
        backend.enqueue_many(echo, [((n,), {}) for n in range(3)])
    assert str(raised.value).endswith(
        "A failover now could lose it. The 3 tasks of this call may be stored (their ids are in "
        "this error's .task_ids): check get_result(id) before enqueuing them again, since a new "
        "enqueue makes new tasks."
    )
    assert [backend.get_result(i).args for i in raised.value.task_ids] == [[0], [1], [2]]


def cut_off_waiting_scripts(admin: redis.Redis) -> None:
    """Kill each connection whose script call waits in the paused server."""
    for client in admin.client_list():
        if "b" in client["flags"] and client["cmd"] in ("eval", "evalsha"):
            admin.client_kill_filter(_id=client["id"])


def test_a_connection_killed_mid_call_names_its_task(enqueue: Enqueue, key_prefix: str) -> None:
    with (
        redis_process() as server,
        override_settings(TASKS=tasks_setting(server.url, key_prefix)),
    ):
        admin = redis.Redis.from_url(server.url, decode_responses=True)
        enqueue(echo, "registers the queue: the next call is one script call")
        admin.client_pause(60_000, all=False)  # writes wait: the call sits in Redis, sent
        try:
            with ThreadPoolExecutor(1, thread_name_prefix="test-cut-off") as pool:
                call = pool.submit(enqueue, echo, "cut off")
                # redis-py sends the call again on a fresh connection a few times: cut each.
                wait_until(lambda: cut_off_waiting_scripts(admin) or call.done(), "a failed call")
                error = call.exception()
        finally:
            admin.client_unpause()
            admin.close()
        assert isinstance(error, MaybeApplied)
        [task_id] = error.task_ids
        message = (
            rf"^Redis at {re.escape(server.url)} is unreachable \(.+\)\. Start Redis or fix TASKS "
            r"LOCATION; the call may have been applied before the connection dropped\. "
            + re.escape(advice(task_id))
            + "$"
        )
        assert re.match(message, str(error))
        with pytest.raises(TaskResultDoesNotExist):  # killed before it ran: nothing stored
            echo.get_result(task_id)
