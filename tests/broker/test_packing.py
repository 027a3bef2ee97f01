"""Both clients pack commands with hiredis, byte for byte as redis-py would."""

import asyncio

import pytest
import redis
import redis.asyncio.connection as aconnection
import redis.connection

from django_threadmill.broker import Broker
from django_threadmill.broker.packing import HiredisPacker, HiredisPacking, packing_class

pytest.importorskip("hiredis", reason="the hiredis extra is not installed: redis-py packs")

COMMANDS = [
    ("EVALSHA", "0123abcd", 2, "tm:{d:q}:t:", "tm:{d:q}:ready", "id@q", '{"a":"é"}', 0, 12.5),
    ("CLIENT SETNAME", "threadmill"),  # a command name of two words is two arguments
    ("SET", b"raw-bytes", 10**20),
]


def sync_packing() -> redis.connection.Connection:
    return redis.connection.Connection(command_packer=HiredisPacker())


# Per client: a connection that packs as redis-py does, and one that packs as ours do.
CONNECTIONS = {
    "asyncio": (aconnection.Connection, lambda: packing_class(aconnection.Connection)()),
    "sync": (redis.connection.Connection, sync_packing),
}


@pytest.mark.parametrize("kind", CONNECTIONS)
@pytest.mark.parametrize("command", COMMANDS, ids=["evalsha", "two-words", "bytes-and-big-int"])
def test_hiredis_packs_what_redis_py_packs(kind: str, command: tuple[object, ...]) -> None:
    plain, packing = CONNECTIONS[kind]
    packed = packing().pack_command(*command)
    assert len(packed) == 1  # one hiredis call
    assert packed[0] == b"".join(plain().pack_command(*command))


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_what_hiredis_refuses_redis_py_refuses_as_before(kind: str) -> None:
    """In redis-py's words, its encoder's, whichever packer its own connection uses: redis-py
    7's sync connection packs with hiredis and said hiredis's ("A tuple item must be ...")."""
    _, packing = CONNECTIONS[kind]
    with pytest.raises(redis.DataError) as before:
        redis.connection.Encoder("utf-8", "strict", decode_responses=False).encode(True)
    with pytest.raises(redis.DataError) as now:
        packing().pack_command("SET", "key", True)
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
    pool = broker.client.connection_pool
    assert isinstance(pool.connection_kwargs["command_packer"], HiredisPacker)
    assert broker.client.ping()
