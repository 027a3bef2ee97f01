"""``aenqueue`` and ``aget_result`` keep their event loop going while they find out why a call
failed.

A failed call's error is worked out by probing the server at LOCATION (wrong_server.py: a plain
``PING``, a second look after a pause, a TLS handshake) or by asking the sentinels why they
named no primary (no_primary.py), on blocking sockets, up to a second each. Run on the caller's
loop, that held every other coroutine of an ASGI process meanwhile; inside a loop the sentinels
were not asked at all, and the error said less than ``enqueue``'s.

Each server here answers a connection only once a heartbeat coroutine of the caller's loop has
ticked ``TICKS`` times while that connection waited: a probe run on the loop gets no answer
before its own timeout, and the error then names no wrong server.
"""

import asyncio
import json
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.ids import make_task_id, new_task_hex
from django_threadmill.compat import TaskResult
from django_threadmill.exceptions import BrokerRefused, BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_server import free_port
from tests.support import run_python

TICKS = 3  # heartbeats a held connection waits for
HOLD_S = 30.0  # a held connection is answered anyway after this: the test fails by then
HTTP_ANSWER = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
TLS_HANDSHAKE = 0x16  # the first byte of a TLS ClientHello
# A TLS record: a fatal handshake_failure alert, what a TLS port may answer a handshake with.
TLS_ALERT = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])

type Answer = Callable[[bytes], bytes]  # what a connection is answered, from its first bytes


def http_server(first: bytes) -> bytes:
    """An HTTP server: it answers anything with a Bad Request."""
    return HTTP_ANSWER


def tls_port(first: bytes) -> bytes:
    """A TLS-only port: it closes a plain connection unanswered, and takes a handshake (it
    refuses this one, with an alert)."""
    return TLS_ALERT if first[:1] == bytes([TLS_HANDSHAKE]) else b""


@dataclass(eq=False)
class Hold:
    """One connection waiting for the heartbeat."""

    ticks: int = 0
    released: threading.Event = field(default_factory=threading.Event)


class HeldServer:
    """A loopback server that answers each connection (``answer`` of its first bytes, then
    it closes it) only once the caller's heartbeat ticked ``TICKS`` times while it waited."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.holds: list[Hold] = []
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.threads = [threading.Thread(target=self._accept)]
        self.threads[0].start()

    def tick(self) -> None:
        """Count one heartbeat for every connection waiting; release those that waited enough."""
        with self.lock:
            for hold in self.holds:
                hold.ticks += 1
                if hold.ticks >= TICKS:
                    hold.released.set()

    def close(self) -> None:
        """Stop accepting, answer whoever waits, and wait for every thread of the server."""
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept; close() alone does not
        with self.lock:
            for hold in self.holds:
                hold.released.set()
        for thread in self.threads:
            thread.join()
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            serving = threading.Thread(target=self._serve, args=(connection,))
            self.threads.append(serving)
            serving.start()

    def _serve(self, connection: socket.socket) -> None:
        hold = Hold()
        with self.lock:
            self.holds.append(hold)
        with connection, suppress(OSError):  # the client may have given up
            first = connection.recv(4096)
            hold.released.wait(HOLD_S)
            connection.sendall(self.answer(first))


@pytest.fixture
def serving() -> Iterator[Callable[[Answer], HeldServer]]:
    """Start HeldServers; close them after the test."""
    servers: list[HeldServer] = []

    def start(answer: Answer) -> HeldServer:
        servers.append(HeldServer(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


async def with_heartbeat(server: HeldServer, call: Awaitable[object]) -> BaseException:
    """Await ``call`` while a heartbeat ticks ``server`` every millisecond; return its error."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(0.001)
            server.tick()

    heartbeat = asyncio.create_task(beat())
    try:
        await call
    except BrokerUnavailable as exc:
        return exc
    finally:
        heartbeat.cancel()
    raise AssertionError(f"{call!r} did not fail")


def backend_at(location: str, key_prefix: str, **options: object) -> ThreadmillTaskBackend:
    return ThreadmillTaskBackend(
        "default", {"LOCATION": location, "OPTIONS": {"key_prefix": key_prefix, **options}}
    )


def aenqueue(backend: ThreadmillTaskBackend) -> Awaitable[TaskResult]:
    return backend.aenqueue(echo, ["held"], {})


def aget_result(backend: ThreadmillTaskBackend) -> Awaitable[TaskResult]:
    return backend.aget_result(make_task_id(new_task_hex(), "default"))


CALLS = pytest.mark.parametrize("call", [aenqueue, aget_result], ids=["aenqueue", "aget_result"])


@CALLS
def test_an_http_server_at_location_is_named_without_holding_the_loop(
    serving: Callable[[Answer], HeldServer],
    key_prefix: str,
    call: Callable[[ThreadmillTaskBackend], Awaitable[object]],
) -> None:
    server = serving(http_server)
    backend = backend_at(f"redis://127.0.0.1:{server.port}/0", key_prefix)

    error = asyncio.run(with_heartbeat(server, call(backend)))

    assert isinstance(error, BrokerRefused), error
    assert "(got 'HTTP/1.1 400 Bad Request'). Is LOCATION pointing at an HTTP server?" in str(error)


@CALLS
def test_a_tls_port_is_named_after_the_second_look_and_the_handshake_without_holding_the_loop(
    serving: Callable[[Answer], HeldServer],
    key_prefix: str,
    call: Callable[[ThreadmillTaskBackend], Awaitable[object]],
) -> None:
    """The plain ``PING`` is closed unanswered twice, a pause apart (``time.sleep``), then a
    TLS handshake is answered: four connections held in turn, the loop ticking all along."""
    server = serving(tls_port)
    url = f"redis://127.0.0.1:{server.port}/0"
    backend = backend_at(url, key_prefix)

    error = asyncio.run(with_heartbeat(server, call(backend)))

    assert isinstance(error, BrokerRefused), error
    assert str(error).startswith(f"The server at {url} is a TLS port, but LOCATION says redis://")


def test_aenqueue_asks_the_sentinels_why_without_holding_the_loop(
    serving: Callable[[Answer], HeldServer], key_prefix: str
) -> None:
    """Before, inside an event loop the sentinels were not asked: the error named no setting."""
    server = serving(http_server)
    sentinel = {"service_name": "mymaster", "sentinels": [["127.0.0.1", server.port]]}
    backend = backend_at("redis://sentinel-managed/0", key_prefix, sentinel=sentinel)

    error = asyncio.run(with_heartbeat(server, aenqueue(backend)))

    assert isinstance(error, BrokerRefused), error
    assert f"127.0.0.1:{server.port} answered with something that is not the Redis protocol" in str(
        error
    )
    assert "it is no sentinel" in str(error)


def test_an_aenqueue_at_interpreter_exit_still_names_the_problem(key_prefix: str) -> None:
    """No thread pool takes work once the interpreter shuts down: the error is worked out on
    the loop then, not replaced by the pool's RuntimeError."""
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there

    done = run_python("-m", __name__, redis_url=url, key_prefix=key_prefix)

    assert done.returncode == 0, done.stderr
    kind, message = json.loads(done.stdout)
    assert kind == "BrokerUnavailable", message
    assert message.startswith(f"Redis at {url} is unreachable"), message
    assert message.endswith("nothing was written."), message


def enqueue_at_exit() -> None:
    """From an atexit handler, aenqueue a task; print the error's class and message."""
    import atexit

    import django

    django.setup()

    def at_exit() -> None:
        try:
            asyncio.run(echo.aenqueue("at exit"))
        except Exception as exc:  # printed for the test to judge
            print(json.dumps([type(exc).__name__, str(exc)]))

    atexit.register(at_exit)


if __name__ == "__main__":
    enqueue_at_exit()
