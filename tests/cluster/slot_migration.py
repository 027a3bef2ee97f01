"""A queue's hash slot put in migration by hand, as a resharding does: ``CLUSTER SETSLOT`` on both
nodes, then ``MIGRATE`` of the keys chosen, one set at a time (``redis-cli --cluster reshard``
moves them in batches, so for a while a queue's records and indexes sit on two nodes)."""

from collections.abc import Callable, Iterator

import pytest
import redis
from redis.crc import key_slot

from django_threadmill.broker import Broker, Lease, Start
from django_threadmill.codec.times import now_ms
from tests.backend_support import WORKER, new_task
from tests.servers.redis_cluster import LocalCluster

from .test_ask_confirmation import primary_ids

QUEUE = "images"


class Move:
    """The queue's slot in migration from its primary to another: keys move when told to."""

    def __init__(self, cluster: LocalCluster, broker: Broker) -> None:
        self.cluster = cluster
        self.keys = broker.queue_keys(QUEUE)
        self.slot = key_slot(self.keys.ready.encode())
        self.owner, self.target = primary_ids(cluster, self.keys.ready)
        self.target_id = self.target.execute_command("CLUSTER MYID")
        owner_id = self.owner.execute_command("CLUSTER MYID")
        self.target.execute_command("CLUSTER SETSLOT", self.slot, "IMPORTING", owner_id)
        self.owner.execute_command("CLUSTER SETSLOT", self.slot, "MIGRATING", self.target_id)

    def migrate(self, keep: Callable[[str], bool] = lambda key: False) -> None:
        """MIGRATE every key of the slot still on its owner but those ``keep`` names."""
        keys = self.owner.execute_command("CLUSTER GETKEYSINSLOT", self.slot, 1000)
        moving = [key for key in keys if not keep(key)]
        if moving:
            port = self.target.connection_pool.connection_kwargs["port"]
            self.owner.execute_command("MIGRATE", "127.0.0.1", port, "", 0, 5000, "KEYS", *moving)

    def finish(self) -> None:
        """Move what is left and give the slot to its new owner on every primary."""
        self.migrate()
        for node in self.cluster.live():
            with redis.Redis(port=node.port, decode_responses=True) as client:
                if client.info("replication")["role"] == "master":
                    client.execute_command("CLUSTER SETSLOT", self.slot, "NODE", self.target_id)


@pytest.fixture
def start_move(cluster: LocalCluster, broker: Broker) -> Iterator[Callable[[], Move]]:
    """Return what puts the slot in migration (the tasks are made first); the move ends after."""
    moves: list[Move] = []

    def start() -> Move:
        moves.append(Move(cluster, broker))
        return moves[-1]

    yield start
    for move in moves:
        move.finish()


def running(broker: Broker, count: int) -> list[Lease]:
    """Enqueue, reserve and start ``count`` tasks of the queue, as a worker does."""
    broker.enqueue(QUEUE, [new_task(QUEUE) for _ in range(count)])
    leases = [r.lease for r in broker.acquire(QUEUE, count).reservations]
    assert broker.start(WORKER, [Start(lease=lease, started_ms=now_ms()) for lease in leases]) == []
    return leases
