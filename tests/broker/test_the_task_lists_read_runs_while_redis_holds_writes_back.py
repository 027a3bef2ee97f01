"""The admin's task list reads its rows while Redis holds writes back (a ``FAILOVER`` waiting
for its replica, a ``CLIENT PAUSE WRITE``): on Redis 7+ its one script, row_fields.lua, is
flagged no-writes (docs/admin.md, Cost per page view).

Redis holds every script call back as a write unless its script says it writes nothing, so the
task list waited for the whole pause, or until the web request gave up. The scripts that write
keep being held back, as Redis means them to be.
"""

import threading
from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.scripts import READ_ONLY, ScriptName, script_source
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess, redis_process, server_version
from tests.support import wait_until

PAUSE_MS = 120_000  # far past the deadline below: unpaused by the test, not by its timeout


@pytest.fixture(scope="module")
def server() -> Iterator[RedisProcess]:
    with redis_process() as started:  # the test pauses its writes: a server of its own
        yield started


@pytest.fixture
def redis_url(server: RedisProcess) -> str:
    return server.url


@pytest.fixture
def writes_paused(server: RedisProcess) -> Iterator[None]:
    with redis.Redis(port=server.port) as admin:
        admin.execute_command("CLIENT", "PAUSE", PAUSE_MS, "WRITE")
        try:
            yield
        finally:
            admin.execute_command("CLIENT", "UNPAUSE")


@pytest.mark.skipif(
    server_version()[1] < (7, 0),
    reason="Redis 6.2 has no script flags (no-writes): it holds the read back for the pause",
)
def test_the_rows_are_read_while_writes_are_held_back(
    backend: ThreadmillTaskBackend, request: pytest.FixtureRequest
) -> None:
    task_id = echo.enqueue("hello").id
    backend.broker.cut_fields([task_id], ["state"], "state", 10)  # the scripts loaded before
    request.getfixturevalue("writes_paused")
    rows: list[object] = []

    def read() -> None:
        rows.append(backend.broker.cut_fields([task_id], ["state", "payload"], "payload", 10))

    reading = threading.Thread(target=read, daemon=True)  # held, it would outlive the test
    reading.start()
    wait_until(lambda: rows, "the task list's rows read during the pause", timeout_s=10)
    reading.join(10)  # ending: gone before the fixture looks for threads left running

    assert rows == [[[b"ready", b'{"path":"t']]]


def test_only_the_scripts_that_write_nothing_are_flagged_no_writes() -> None:
    flagged = {
        name
        for name in ScriptName
        if script_source(name, flags=True).startswith("#!lua flags=no-writes\n")
    }
    assert flagged == READ_ONLY == {ScriptName.ROW_FIELDS}
    assert not any(script_source(name).startswith("#!") for name in ScriptName)
