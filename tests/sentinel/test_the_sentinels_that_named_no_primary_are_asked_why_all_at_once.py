"""Sentinels that named no primary are asked why all at once, not one after another.

redis-py's lookup waits on each hung sentinel in turn (a frozen host: the kernel accepts, nothing
answers). Asked why in turn again, each hung sentinel held the failed call a second time: three
held ``threadmill_health`` 9.6 s at its default ``--timeout 2``, five 18.4 s, past the 10 s its
probe is given (docs/deploy.md, Probes); ``aenqueue`` looked up twice besides, as its retry on
a fresh connection ran the lookup again. Each sentinel here notes when each connection to it
opens and closes: the lookup's is its first, the one that asks why its second.
"""

import asyncio
import re
import selectors
import socket
import threading
from collections.abc import Callable, Iterator
from functools import partial
from operator import itemgetter
from selectors import EVENT_READ
from typing import Literal

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerRefused, BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_sentinel import SERVICE
from tests.support import run_python, wait_until

from .conftest import LOCATION

SENTINELS = 3
TIMEOUT_S = 1.0  # the clients' socket timeout: the lookup's wait on each hung sentinel

type Seen = tuple[Literal["opened", "closed"], int, int]  # what, which sentinel, its nth connection
CONNECTION, LISTENER = 0, 1  # the order in which what is ready in one round is handled


class HungSentinels:
    """Sentinels on frozen hosts: connections are taken and never answered. One thread notes
    each connection opened and closed, in the order the kernel reports them."""

    def __init__(self, count: int) -> None:
        self.listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(count)]
        self.seen: list[Seen] = []
        self._taken = [0] * count  # connections each sentinel has taken so far
        self._open: set[socket.socket] = set()
        self._selector = selectors.DefaultSelector()
        for index, listener in enumerate(self.listeners):
            listener.setblocking(False)
            self._selector.register(listener, EVENT_READ, (LISTENER, partial(self._accept, index)))
        self._stop, self._stopped = socket.socketpair()
        self._selector.register(self._stopped, EVENT_READ, None)
        self._thread = threading.Thread(target=self._serve, name="test-hung-sentinels")

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [listener.getsockname() for listener in self.listeners]

    def __enter__(self) -> "HungSentinels":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.send(b"x")
        self._thread.join()
        self._selector.close()
        for opened in (*self.listeners, *self._open, self._stop, self._stopped):
            opened.close()

    def _serve(self) -> None:
        while True:
            ready = [key.data for key, _ in self._selector.select()]
            if None in ready:
                return
            # Connections first: one closed just before another opened, both seen in the same
            # round, is noted in the order it happened.
            for _, handle in sorted(ready, key=itemgetter(0)):
                handle()

    def _accept(self, index: int) -> None:
        while True:
            try:
                connection, _ = self.listeners[index].accept()
            except BlockingIOError:
                return
            connection.setblocking(False)
            nth = self._taken[index]
            self._taken[index] += 1
            self.seen.append(("opened", index, nth))
            self._open.add(connection)
            read = partial(self._read, connection, index, nth)
            self._selector.register(connection, EVENT_READ, (CONNECTION, read))

    def _read(self, connection: socket.socket, index: int, nth: int) -> None:
        if _closed(connection):
            self.seen.append(("closed", index, nth))
            self._selector.unregister(connection)
            self._open.discard(connection)
            connection.close()


def _closed(connection: socket.socket) -> bool:
    """Read what ``connection`` sent (a request never answered); tell whether it was closed."""
    while True:
        try:
            if not connection.recv(4096):
                return True
        except BlockingIOError:
            return False
        except ConnectionError:
            return True


@pytest.fixture
def hung() -> Iterator[HungSentinels]:
    with HungSentinels(SENTINELS) as sentinels:
        yield sentinels


@pytest.fixture
def redis_url() -> str:
    return LOCATION  # the package's module-wide Sentinel setup is not started here


@pytest.fixture
def tasks_options(hung: HungSentinels) -> dict[str, object]:
    sentinel = {"service_name": SERVICE, "sentinels": hung.addresses}
    return {"sentinel": sentinel, "socket_timeout": TIMEOUT_S}


def asked_why(hung: HungSentinels) -> list[str]:
    """Wait until each sentinel's two connections closed (the lookup's, the one asking why);
    return what became of the latter, in order."""
    wait_until(lambda: len(hung.seen) >= 4 * SENTINELS, "each sentinel's 2 connections closed")
    assert sorted(nth for what, _, nth in hung.seen if what == "opened") == sorted(
        [0, 1] * SENTINELS
    )
    return [what for what, _, nth in hung.seen if nth == 1]


def enqueue(backend: ThreadmillTaskBackend) -> None:
    backend.enqueue(echo, ["x"], {})


def aenqueue(backend: ThreadmillTaskBackend) -> None:
    """Its errors are translated in a worker thread, where the sentinels are asked why."""
    asyncio.run(backend.aenqueue(echo, ["x"], {}))


@pytest.mark.parametrize("call", [enqueue, aenqueue], ids=["enqueue", "aenqueue"])
def test_an_enqueue_asks_every_hung_sentinel_before_any_gives_up(
    hung: HungSentinels,
    backend: ThreadmillTaskBackend,
    call: Callable[[ThreadmillTaskBackend], None],
) -> None:
    with pytest.raises(BrokerUnavailable) as caught:
        call(backend)
    assert not isinstance(caught.value, BrokerRefused)  # a frozen host may come back
    # redis-py's words, passed on: its pure-Python parser says "Timeout reading from socket" on
    # redis-py 6 and 7 (no hiredis installed); hiredis, and redis-py 8, name the address.
    for host, port in hung.addresses:
        address = re.escape(f"{host}:{port}")
        said = rf"{address} is unreachable \(Timeout reading from ({address}|socket)\)"
        assert re.search(said, str(caught.value)), str(caught.value)
    assert asked_why(hung) == ["opened"] * SENTINELS + ["closed"] * SENTINELS


def test_threadmill_health_asks_every_hung_sentinel_before_any_gives_up(
    hung: HungSentinels, key_prefix: str, tasks_options: dict[str, object]
) -> None:
    """A new process looks the primary up: --timeout is each sentinel's wait in the lookup,
    and at most that when they are asked why."""
    health = run_python(
        "manage.py",
        "threadmill_health",
        f"--timeout={TIMEOUT_S:g}",
        redis_url=LOCATION,
        key_prefix=key_prefix,
        options=tasks_options,
    )
    assert health.returncode == 3, health.stderr
    assert "No sentinel named a primary for Redis at redis://sentinel-managed/0" in health.stderr
    assert asked_why(hung) == ["opened"] * SENTINELS + ["closed"] * SENTINELS
