"""A read that Redis did not answer (silent past socket_timeout, busy running a script) says
that nothing was changed: it raised ``MaybeApplied``, "the call may have been applied", and
"cannot serve writes", words for a write (docs/enqueue.md, What each error means, and what was
written). It gives no advice (it said "retry the read", which a probe, a pause and a reap pass
printed too): the caller says what to do. A write Redis did not answer says so, not that Redis
is unreachable."""

import asyncio
import re
import threading
from collections.abc import Callable, Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.connection import translated_errors
from django_threadmill.broker.inspect.inspector import Inspector
from django_threadmill.compat import TaskResult
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from django_threadmill.progress.read import progress_of
from django_threadmill.workflows.result import get_workflow
from testproject.example.tasks import echo
from tests.faults.support import paused
from tests.servers.redis_server import RedisProcess, redis_process, server_version
from tests.support import wait_until

SOCKET_TIMEOUT_S = 0.2  # a paused Redis never answers: any timeout fails the read
BUSY_AFTER_MS = 10  # Redis answers BUSY once a script has run this long
LOOPING_SCRIPT = "while true do end"  # runs until SCRIPT KILL
ENGINE = server_version()[0]  # names itself in its BUSY reply: "Valkey is busy ..."

type Read = Callable[[ThreadmillTaskBackend, TaskResult], object]

READS: dict[str, Read] = {
    "get_result": lambda backend, result: backend.get_result(result.id),
    "aget_result": lambda backend, result: asyncio.run(backend.aget_result(result.id)),
    "progress_of": lambda backend, result: progress_of(result),
    "get_workflow": lambda backend, result: get_workflow("0" * 32),
    "admin counts": lambda backend, result: Inspector(backend.broker).waiting(["default"]),
    "admin rows": lambda backend, result: Inspector(backend.broker).rows([result.id]),
    "damaged listing": lambda backend, result: backend.broker.damaged(["default"]),
}


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisProcess]:
    # Redis 7 renamed lua-time-limit busy-reply-threshold; 6.2 knows the old name alone.
    setting = "--busy-reply-threshold" if server_version()[1] >= (7, 0) else "--lua-time-limit"
    with redis_process(setting, str(BUSY_AFTER_MS)) as server:
        yield server


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"socket_timeout": SOCKET_TIMEOUT_S}


@pytest.fixture
def stored(backend: ThreadmillTaskBackend) -> TaskResult:
    """A stored task (its queue registered, the scripts loaded): the reads have a record."""
    return echo.enqueue(1)


@pytest.fixture
def busy(own_redis: RedisProcess) -> Iterator[None]:
    """Keep ``own_redis`` running a script that never ends, until the test is done."""
    admin = redis.Redis.from_url(own_redis.url)
    looping = threading.Thread(target=_run_looping_script, args=(own_redis.url,), name="looping")
    looping.start()
    try:
        wait_until(lambda: _answers_busy(admin), "Redis answering BUSY")
        yield
    finally:
        wait_until(lambda: _killed_script(admin), "the looping script killed")
        looping.join()
        admin.close()


def _run_looping_script(url: str) -> None:
    with redis.Redis.from_url(url) as client, pytest.raises(redis.ResponseError):
        client.eval(LOOPING_SCRIPT, 0)


def _answers_busy(client: redis.Redis) -> bool:
    try:
        client.ping()
    except redis.ResponseError as exc:
        return str(exc).startswith("BUSY")
    return False


def _killed_script(client: redis.Redis) -> bool:
    try:
        client.script_kill()
    except redis.ResponseError as exc:  # no script running: it ended (or never started)
        return "NOTBUSY" in str(exc)
    return True


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_a_read_redis_does_not_answer_in_time_changed_nothing(
    backend: ThreadmillTaskBackend, own_redis: RedisProcess, stored: TaskResult, read: Read
) -> None:
    with paused(own_redis), pytest.raises(BrokerUnavailable) as raised:
        read(backend, stored)
    assert not isinstance(raised.value, MaybeApplied)
    assert re.fullmatch(
        rf"Redis at {re.escape(own_redis.url)} did not answer within "
        rf"socket_timeout={SOCKET_TIMEOUT_S}s \(Timeout reading from .+\): it is busy "
        r"\(a long script or command: SLOWLOG GET\), overloaded or frozen; nothing was "
        r"changed\.",
        str(raised.value),
    ), raised.value


def test_a_write_redis_does_not_answer_in_time_may_have_been_applied(
    backend: ThreadmillTaskBackend, own_redis: RedisProcess, stored: TaskResult
) -> None:
    with paused(own_redis), pytest.raises(MaybeApplied) as raised:
        echo.enqueue(2)
    # redis-py's words in the parentheses: "from 127.0.0.1:<port>", or "from socket" where its
    # parser raised it (redis-py 6, say).
    assert re.match(
        rf"Redis at {re.escape(own_redis.url)} did not answer within "
        rf"socket_timeout={SOCKET_TIMEOUT_S}s \(Timeout reading from .+\): it is busy \(a long "
        r"script or command: SLOWLOG GET\), overloaded or frozen, or holds writes back \(a "
        r"FAILOVER under way, a CLIENT PAUSE WRITE: INFO replication, master_failover_state\); "
        r"the call may have been applied, or may still be once Redis goes on\.",
        str(raised.value),
    ), raised.value


def test_a_write_held_back_by_a_write_pause_names_it(
    backend: ThreadmillTaskBackend, own_redis: RedisProcess, stored: TaskResult
) -> None:
    """A FAILOVER holds every write back until its replica has caught up, as CLIENT PAUSE
    WRITE does: the write's error named only a busy, overloaded or frozen Redis, which answers
    the reads an operator then tries at once."""
    with redis.Redis.from_url(own_redis.url) as admin:
        admin.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
        try:
            with pytest.raises(MaybeApplied) as raised:
                echo.enqueue(2)
        finally:
            admin.execute_command("CLIENT", "UNPAUSE")

    assert (
        "overloaded or frozen, or holds writes back (a FAILOVER under way, a CLIENT PAUSE "
        "WRITE: INFO replication, master_failover_state); the call may have been applied"
    ) in str(raised.value)


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_a_read_redis_refuses_while_a_script_runs_changed_nothing(
    backend: ThreadmillTaskBackend,
    own_redis: RedisProcess,
    stored: TaskResult,
    busy: None,
    read: Read,
) -> None:
    with pytest.raises(BrokerUnavailable) as raised:
        read(backend, stored)
    assert not isinstance(raised.value, MaybeApplied)
    assert re.fullmatch(
        rf"Redis at {re.escape(own_redis.url)} is busy running a script \(.*BUSY {ENGINE} is "
        r"busy running a script\. You can only call SCRIPT KILL or SHUTDOWN NOSAVE\.\); "
        r"nothing was changed\.",
        str(raised.value),
    ), raised.value


def test_a_write_redis_refuses_while_a_script_runs_says_so(
    backend: ThreadmillTaskBackend, own_redis: RedisProcess, stored: TaskResult, busy: None
) -> None:
    with pytest.raises(BrokerUnavailable) as raised:
        echo.enqueue(2)
    assert str(raised.value) == (
        f"Redis at {own_redis.url} cannot serve writes now (BUSY {ENGINE} is busy running a "
        "script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.)."
    )


def test_a_read_whose_connection_dropped_changed_nothing(own_redis: RedisProcess) -> None:
    """Raised by hand: redis-py sends a read again on a fresh connection when one drops."""
    dropped = redis.ConnectionError("Connection closed by server.")
    with (
        pytest.raises(BrokerUnavailable) as raised,
        translated_errors(own_redis.url, 10, read=True),
    ):
        raise dropped
    assert not isinstance(raised.value, MaybeApplied)
    assert str(raised.value) == (
        f"Redis at {own_redis.url} is unreachable (Connection closed by server.). Start Redis "
        "or fix TASKS LOCATION; nothing was changed."
    )
    with pytest.raises(MaybeApplied), translated_errors(own_redis.url, 10):
        raise dropped
