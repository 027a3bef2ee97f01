"""A web server where the Sentinel settings point misleads no call.

At a sentinel address (a port taken over), it is passed over like a sentinel that is down, and
named when no sentinel is left. Before, redis-py's parse error ended the lookup there: listed
first, one wrong address among healthy sentinels stopped every enqueue and kept the worker from
starting, with a message that blamed LOCATION.

At LOCATION's host, which Sentinel ignores, it is never asked. Before, a connection to the
primary dropped mid-call sent a probe there, and its answer turned the enqueue's
``MaybeApplied`` into "answered with something that is not the Redis protocol ...; nothing was
written": a caller that enqueued again made a second task.
"""

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerRefused, MaybeApplied
from testproject.example.tasks import echo
from tests.faults.support import request_unread_from
from tests.faults.test_wrong_server import accepts
from tests.servers.redis_cluster import wait_for
from tests.servers.redis_sentinel import SERVICE, LocalSentinel
from tests.servers.redis_server import free_port
from tests.support import running, wait_until, worker

from .conftest import LOCATION, command_env

# A web server's answer to a request line it cannot read, with CRLF line ends as nginx writes
# them: redis-py's Python parser and hiredis alike read its first byte as no Redis reply.
WEB_SERVER = """
import socketserver, sys

class BadRequest(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.recv(4096)
        self.request.sendall(b"HTTP/1.1 400 Bad Request\\r\\nContent-Length: 0\\r\\n\\r\\n")

socketserver.ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), BadRequest).serve_forever()
"""


@pytest.fixture(scope="module")
def http_address() -> Iterator[tuple[str, int]]:
    """The address of a web server: no sentinel, and not the Redis protocol."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", WEB_SERVER, str(port)])
    try:
        wait_until(lambda: accepts(port), "the web server listening")
        yield ("127.0.0.1", port)
    finally:
        server.kill()
        server.wait()


@pytest.fixture
def tasks_options(
    sentinel_setup: LocalSentinel, http_address: tuple[str, int]
) -> dict[str, object]:
    """The HTTP server listed first, before the three sentinels."""
    sentinels = [list(http_address), *(list(address) for address in sentinel_setup.addresses)]
    return {"sentinel": {"service_name": SERVICE, "sentinels": sentinels}}


def test_enqueue_asks_the_next_sentinel(backend: ThreadmillTaskBackend) -> None:
    result = echo.enqueue("past the HTTP server")
    assert echo.get_result(result.id).status == TaskResultStatus.READY


def test_aenqueue_asks_the_next_sentinel(backend: ThreadmillTaskBackend) -> None:
    async def enqueue() -> str:
        result = await echo.aenqueue("past the HTTP server")
        return (await echo.aget_result(result.id)).status

    assert asyncio.run(enqueue()) == TaskResultStatus.READY


def test_a_worker_starts_and_runs_tasks(
    backend: ThreadmillTaskBackend, key_prefix: str, tasks_options: dict[str, object]
) -> None:
    with running(worker(LOCATION, key_prefix, extra_env=command_env(tasks_options))):
        result = echo.enqueue("ran")
        wait_until(lambda: (result.refresh(), result.status)[1] == TaskResultStatus.SUCCESSFUL,
                   "the task ran")  # fmt: skip


def backend_at(
    location: str, key_prefix: str, sentinels: list[list[object]]
) -> ThreadmillTaskBackend:
    sentinel = {"service_name": SERVICE, "sentinels": sentinels}
    options = {"key_prefix": key_prefix, "sentinel": sentinel}
    return ThreadmillTaskBackend("default", {"LOCATION": location, "OPTIONS": options})


def test_the_address_is_named_when_no_sentinel_is_left(
    http_address: tuple[str, int], key_prefix: str
) -> None:
    host, port = http_address
    backend = backend_at(LOCATION, key_prefix, [[host, port]])
    with pytest.raises(
        BrokerRefused,
        match=rf"\(No master found for 'mymaster': {host}:{port} answered with something that "
        r"is not the Redis protocol \(.*\): it is no sentinel; list the sentinels' addresses "
        r"\(port 26379 by default\) in OPTIONS\['sentinel'\]\['sentinels'\]\)\. Fix "
        r"OPTIONS\['sentinel'\]; nothing was written\.$",
    ):
        backend.enqueue(echo, ["x"], {})


def test_a_call_dropped_mid_way_may_have_been_applied_whatever_answers_at_location(
    sentinel_setup: LocalSentinel, http_address: tuple[str, int], key_prefix: str
) -> None:
    """The primary, paused with the enqueue unread, is killed: the enqueue may be stored.

    Last in the module: the sentinels promote the replica, and the old primary comes back as
    its replica.
    """
    host, port = http_address
    sentinels = [list(address) for address in sentinel_setup.addresses]
    backend = backend_at(f"redis://{host}:{port}/0", key_prefix, sentinels)
    backend.enqueue(echo, ["connects"], {})
    primary = sentinel_setup.current_primary()
    assert primary.process is not None
    raised: list[BaseException] = []
    caller = threading.Thread(target=enqueue_catching, args=(backend, raised))
    os.kill(primary.process.pid, signal.SIGSTOP)
    try:
        caller.start()
        wait_until(lambda: request_unread_from(os.getpid(), primary.port), "the enqueue sent")
    finally:
        primary.kill()  # SIGKILL reaches a stopped process
        caller.join()
        wait_for(lambda: sentinel_setup.current_primary() is not primary, "the replica promoted")
        sentinel_setup.restart(primary)
    [error] = raised
    assert isinstance(error, MaybeApplied), error
    assert "the call may have been applied before the connection dropped" in str(error)


def enqueue_catching(backend: ThreadmillTaskBackend, raised: list[BaseException]) -> None:
    try:
        backend.enqueue(echo, ["dropped"], {})
    except BaseException as exc:  # the test asserts what it was
        raised.append(exc)
