"""Both clients pack commands with hiredis, byte for byte as redis-py would (issue 11)."""

import asyncio

import pytest
import redis
import redis.asyncio.connection as aconnection
import redis.connection

from django_threadmill.broker import Broker
from django_threadmill.broker.packing import HiredisPacking, packing_class

COMMANDS = [
    ("EVALSHA", "0123abcd", 2, "tm:{d:q}:t:", "tm:{d:q}:ready", "id@q", '{"a":"é"}', 0, 12.5),
    ("CLIENT SETNAME", "threadmill"),  # a command name of two words is two arguments
    ("SET", b"raw-bytes", 10**20),
]


CLASSES = [aconnection.Connection, redis.connection.Connection]


@pytest.mark.parametrize("connection_class", CLASSES, ids=["asyncio", "sync"])
@pytest.mark.parametrize("command", COMMANDS, ids=["evalsha", "two-words", "bytes-and-big-int"])
def test_hiredis_packs_what_redis_py_packs(
    connection_class: type, command: tuple[object, ...]
) -> None:
    plain = connection_class()
    packing = packing_class(connection_class)()
    assert b"".join(packing.pack_command(*command)) == b"".join(plain.pack_command(*command))


@pytest.mark.parametrize("connection_class", CLASSES, ids=["asyncio", "sync"])
def test_what_hiredis_refuses_redis_py_refuses_as_before(connection_class: type) -> None:
    with pytest.raises(redis.DataError) as before:
        connection_class().pack_command("SET", "key", True)
    with pytest.raises(redis.DataError) as now:
        packing_class(connection_class)().pack_command("SET", "key", True)
    assert str(now.value) == str(before.value)


def test_another_encoding_is_packed_by_redis_py() -> None:
    plain = aconnection.Connection(encoding="latin-1")
    packing = packing_class(aconnection.Connection)(encoding="latin-1")
    command = ("SET", "key", "é")
    assert b"".join(packing.pack_command(*command)) == b"".join(plain.pack_command(*command))


def test_both_clients_of_one_redis_pack_with_hiredis(broker: Broker) -> None:
    async def connection_class() -> type:
        client, _ = broker._async_client()  # no public view of the loop's pool
        assert await client.ping()
        return client.connection_pool.connection_class

    assert issubclass(asyncio.run(connection_class()), HiredisPacking)
    assert broker.client.ping()
    assert issubclass(broker.client.connection_pool.connection_class, HiredisPacking)
