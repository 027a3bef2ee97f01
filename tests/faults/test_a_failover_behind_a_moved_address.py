"""A failover behind an address that moves, as managed Redis services do it (an ElastiCache or
Azure primary endpoint): LOCATION names a DNS name that is pointed at the promoted replica, no
Sentinel. New connections reach the new primary; the ones already open stay on the old one,
now a replica, as TCP connections do when a DNS record changes.

redis-py kept its pooled connections to the demoted server, so every write met READONLY until
the processes restarted: the worker backed off for good, and so did every enqueue. Here a
forwarder in the test stands for the DNS name.
"""

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.reconnects import RECONNECT_EVERY_S, Reconnects
from django_threadmill.compat import TaskResult
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from tests.limits.tasks import hold_until
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import HandClock, wait_until, worker

from . import tasks
from .support import all_successful, executions
from .test_a_primary_made_a_replica import (
    SYNC_AT_ONCE,
    client_of,
    copied_everything,
    make_replica,
    promote,
)

BATCH = 20  # tasks per enqueue
RECOVERY_S = 30.0  # how long an enqueue is tried again after a failover before the test fails


class Forwarder:
    """A loopback port that forwards each new connection to ``target``'s port; a connection
    made stays with the server it reached, as one made before a DNS record moved does."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []  # added by the accepting thread only
        self.threads = [threading.Thread(target=self._accept, name="forwarder")]
        self.threads[0].start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:  # nothing listens there: refused, as at the address itself
                client.close()
                continue
            self.sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                pump = threading.Thread(target=_pump, args=(source, sink))
                self.threads.append(pump)
                pump.start()

    def close(self) -> None:
        """Stop accepting, drop every forwarded connection and join the threads."""
        with suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept on Linux
        self.threads[0].join()  # no socket is added after
        self.listener.close()
        for sock in self.sockets:
            _close(sock)
        for thread in self.threads:
            thread.join()


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until either end closes."""
    with suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


@contextmanager
def forwarding(target: RedisProcess) -> Iterator[Forwarder]:
    forwarder = Forwarder(target.port)
    try:
        yield forwarder
    finally:
        forwarder.close()


def fail_over(old: RedisProcess, new: RedisProcess, address: Forwarder) -> None:
    """Promote ``new``, make ``old`` its replica and move ``address`` to ``new``, as a managed
    service's failover does."""
    wait_until(lambda: copied_everything(old, new), "the replica caught up")
    promote(new)
    make_replica(old, new)
    address.target = new.port


def waits_at(server: RedisProcess) -> bool:
    """Tell whether a client of ``server`` is blocked in a BLPOP."""
    with redis.Redis.from_url(server.url) as client:
        return any(entry["cmd"] == "blpop" for entry in client.client_list())


def taken(enqueue: Callable[[], list[TaskResult]], refusals: list[str]) -> list[TaskResult]:
    """Call ``enqueue`` (one Redis call) until Redis takes it; keep the messages of the calls
    it refused, which wrote nothing (not ``MaybeApplied``)."""
    stored: list[TaskResult] = []

    def tried() -> bool:
        try:
            stored.extend(enqueue())
        except MaybeApplied:
            raise
        except BrokerUnavailable as refused:
            refusals.append(str(refused))
            return False
        return True

    wait_until(tried, "an enqueue Redis takes after the failover", RECOVERY_S)
    return stored


async def aenqueued(log: Path) -> list[TaskResult]:
    return list(await asyncio.gather(*(tasks.count_run.aenqueue(str(log)) for _ in range(BATCH))))


def enqueued(backend: ThreadmillTaskBackend, log: Path) -> list[TaskResult]:
    return backend.enqueue_many(tasks.count_run, [((str(log),), {}) for _ in range(BATCH)])


@pytest.fixture
def primary() -> Iterator[RedisProcess]:
    with redis_process(*SYNC_AT_ONCE) as started:
        yield started


@pytest.fixture
def replica(primary: RedisProcess) -> Iterator[RedisProcess]:
    with redis_process(*SYNC_AT_ONCE, "--replicaof", "127.0.0.1", str(primary.port)) as started:
        yield started


@pytest.fixture
def address(primary: RedisProcess) -> Iterator[Forwarder]:
    with forwarding(primary) as forwarder:
        yield forwarder


@pytest.fixture
def redis_url(address: Forwarder) -> str:
    return address.url


def test_the_worker_and_enqueues_follow_the_address_to_the_promoted_replica(
    backend: ThreadmillTaskBackend,
    primary: RedisProcess,
    replica: RedisProcess,
    address: Forwarder,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    log, marker, release = tmp_path / "runs.log", tmp_path / "holding", tmp_path / "release"
    command = worker(address.url, key_prefix, "--threads", "2")
    refusals: list[str] = []
    try:
        with asyncio.Runner() as loop:  # one loop throughout: its client keeps its connections
            before = enqueued(backend, log) + loop.run(aenqueued(log))
            wait_until(lambda: all_successful(before), "the tasks enqueued before")
            holder = hold_until.enqueue(str(marker), str(release))  # running at the failover
            wait_until(marker.exists, "the held task runs")
            fail_over(primary, replica, address)
            release.touch()  # its outcome meets the demoted server first
            # One task a try: a refused try wrote nothing, and is not counted.
            after = taken(lambda: [loop.run(tasks.count_run.aenqueue(str(log)))], refusals)
            after += taken(lambda: enqueued(backend, log), refusals) + loop.run(aenqueued(log))
        wait_until(lambda: all_successful([*after, holder]), "the tasks run after the failover")
        # Idle again, it waits for wake tokens at the new primary (on one Redis the idle BLPOP
        # rides the pooled client, so this holds with the pools' fix alone).
        wait_until(lambda: waits_at(replica), "the idle worker's BLPOP at the promoted replica")
        command.signal()
        assert command.wait() == 0, command.log
        assert len(command.child_pids()) == 1, command.log  # it recovered without a restart
    finally:
        command.close()
    assert refusals, "no enqueue met the demoted server: the failover was not behind the address"
    assert all("is a read-only replica" in refused for refused in refusals), refusals
    assert "point LOCATION at the primary" in refusals[0]
    assert executions(log) == {result.id: 1 for result in before + after}


def test_a_replica_at_location_is_connected_to_again_at_most_once_a_while(
    primary: RedisProcess, replica: RedisProcess, key_prefix: str
) -> None:
    """A LOCATION that names a replica for good: each enqueue is refused, and the clients
    connect again once per RECONNECT_EVERY_S, not at each call."""
    at_replica = ThreadmillTaskBackend(
        "default", {"LOCATION": replica.url, "OPTIONS": {"key_prefix": key_prefix}}
    )
    clock = HandClock(0.0)
    at_replica.broker.reconnects = Reconnects(clock)  # before its clients are made
    with client_of(replica) as watching:

        def connections_after(enqueues: int) -> int:
            """Return how many connections the replica took while ``enqueues`` were refused."""
            before = watching.info("stats")["total_connections_received"]
            for _ in range(enqueues):
                with pytest.raises(BrokerUnavailable, match="is a read-only replica"):
                    at_replica.enqueue(tasks.count_run, ["unused"], {})
            return int(watching.info("stats")["total_connections_received"] - before)

        # The first call connects and starts a round; the second connects in it; none again.
        assert connections_after(5) == 2
        assert connections_after(5) == 0
        clock.now += RECONNECT_EVERY_S
        assert connections_after(5) == 1
