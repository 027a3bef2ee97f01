"""Block an idle worker until one of its queues is woken: one BLPOP per hash slot it serves.

On one Redis every wake list fits one BLPOP. A Redis Cluster refuses a BLPOP over two slots, so
a worker whose queues sit in several slots blocks once per slot, each from its own short-lived
thread; the first wake-up ends the others by pushing to their process lists (DESIGN.md §3
rule 7: idle workers block, pickup stays about one round trip).
"""

from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import suppress

import redis
from redis.crc import key_slot

from .keys import KeySpace
from .topology import SyncClient

PROCESS_WAKE_TTL_MS = 60_000  # an unread stop token expires: it only ever wakes one wait
CANCEL_TOKEN = "cancel"  # ends the other slots' BLPOPs once one slot woke the worker


def wake_groups(
    keyspace: KeySpace, queues: Sequence[str], worker_id: str, *, cluster: bool
) -> list[list[str]]:
    """Return the lists to block on, one group per hash slot; each ends with a process list."""
    by_slot: dict[int, list[str]] = defaultdict(list)
    for queue in queues:
        slot = key_slot(keyspace.queue(queue).wake.encode()) if cluster else 0
        by_slot[slot].append(queue)
    return [
        [
            *(keyspace.queue(queue).wake for queue in group),
            keyspace.queue(group[0]).process_wake(worker_id),
        ]
        for group in by_slot.values()
    ]


def push_process_tokens(
    client: SyncClient, groups: Sequence[Sequence[str]], token: str = "stop"
) -> None:
    """Push ``token`` to each group's process list, so a BLPOP on it returns now."""
    with client.pipeline(transaction=False) as pipe:
        for group in groups:
            pipe.rpush(group[-1], token)
            pipe.pexpire(group[-1], PROCESS_WAKE_TTL_MS)
        pipe.execute()


def wait_any(client: SyncClient, groups: Sequence[Sequence[str]], timeout_s: float) -> bool:
    """Block until a token arrives in any group or ``timeout_s`` passes; True if woken."""
    timeout_s = max(timeout_s, 0.001)
    if len(groups) == 1:
        return client.blpop(list(groups[0]), timeout=timeout_s) is not None
    with ThreadPoolExecutor(len(groups), thread_name_prefix="threadmill-wake") as pool:
        futures = [pool.submit(client.blpop, list(keys), timeout_s) for keys in groups]
        done, pending = wait(futures, return_when=FIRST_COMPLETED)
        blocked = [keys for keys, future in zip(groups, futures, strict=True) if future in pending]
        # Unpushed, those BLPOPs end by timeout_s anyway.
        with suppress(redis.RedisError, redis.exceptions.RedisClusterException):
            if blocked:
                push_process_tokens(client, blocked, CANCEL_TOKEN)
        replies = {
            tuple(keys): future.result() for keys, future in zip(groups, futures, strict=True)
        }
    # A BLPOP that returned on its own before the cancel token came leaves that token behind:
    # take it back, or the next wait would wake for nothing.
    unread = [keys[-1] for keys in blocked if replies[tuple(keys)] != [keys[-1], CANCEL_TOKEN]]
    if unread:
        with client.pipeline(transaction=False) as pipe:
            for key in unread:
                pipe.lrem(key, 1, CANCEL_TOKEN)
            pipe.execute()
    return any(future.result() is not None for future in done)
