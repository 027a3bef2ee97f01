"""The queues under test: one adapter per queue, each with its worker module or Django project."""

from .base import Peer, RunContext, WorkerSpec
from .celery import CeleryPeer
from .dramatiq import DramatiqPeer
from .huey import HueyPeer
from .tasks_db import TasksDbPeer, TasksDbPostgresPeer
from .tasks_redis import TasksRedisPeer
from .threadmill import BASELINE_DIR, BaselinePeer, ThreadmillPeer
from .vtasks import VtasksPeer

# The order of the table and of every round: ours first, then the two references of the targets
# (dramatiq, django-vtasks), then the rest.
PEERS: tuple[Peer, ...] = (
    ThreadmillPeer(),
    DramatiqPeer(),
    VtasksPeer(),
    CeleryPeer(),
    HueyPeer(),
    TasksDbPeer(),
    TasksDbPostgresPeer(),
    TasksRedisPeer(),
    *((BaselinePeer(),) if BASELINE_DIR else ()),
)


def peer_named(name: str) -> Peer:
    """Return the adapter called ``name``."""
    for peer in PEERS:
        if peer.name == name:
            return peer
    raise KeyError(f"No benchmark peer named {name!r}: pick one of {[p.name for p in PEERS]}.")


__all__ = ["PEERS", "Peer", "RunContext", "WorkerSpec", "peer_named"]
