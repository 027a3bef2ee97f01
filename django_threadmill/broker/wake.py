"""Block an idle worker until one of its queues is woken: one BLPOP per hash slot it serves.

On one Redis every wake list fits one BLPOP. A Redis Cluster refuses a BLPOP over two slots, so
a worker whose queues sit in several slots keeps one waiter thread per slot, each blocking on
that slot's lists in turn and setting one shared event: pickup stays one BLPOP reply plus one
thread hand-off (docs/design.md, Idle workers block, they do not poll).
"""

import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, suppress

from redis.crc import key_slot

from ..exceptions import BrokerUnavailable
from .connection import unreachable
from .keys import KeySpace
from .topology import SyncClient

PROCESS_WAKE_TTL_MS = 60_000  # an unread stop token expires: it only ever wakes one wait
BLOCK_S = 5.0  # longest BLPOP, in seconds; shorter under a short socket timeout (idle_block_s)
SHORTEST_BLOCK_S = 0.001  # Redis counts a BLPOP timeout in ms, and one of 0 blocks forever
# A BLPOP that times out returns at the server's next cron tick after its timeout: up to
# 1 / hz late, 100 ms at Redis's default hz of 10.
BLPOP_LATE_S = 0.1
RETRY_S = 1.0  # a waiter whose BLPOP failed tries again after this


def idle_block_s(socket_timeout_s: float | None) -> float:
    """Return how long one BLPOP may block: BLOCK_S, or half the socket timeout when that is
    shorter, so the reply comes well before the socket gives up on it; a read that times out
    reads as Redis being unreachable (docs/design.md, Idle workers block, they do not poll)."""
    if socket_timeout_s is None:
        return BLOCK_S
    return max(SHORTEST_BLOCK_S, min(BLOCK_S, socket_timeout_s / 2))


def wake_groups(
    keyspace: KeySpace, parts: Sequence[str], worker_id: str, *, cluster: bool
) -> list[list[str]]:
    """Return the lists to block on, one group per hash slot; each ends with a process list.

    ``parts`` name the keys of the queues served: a queue, or each shard of a sharded one.
    """
    by_slot: dict[int, list[str]] = defaultdict(list)
    for part in parts:
        slot = key_slot(keyspace.queue(part).wake.encode()) if cluster else 0
        by_slot[slot].append(part)
    return [
        [
            *(keyspace.queue(part).wake for part in group),
            keyspace.queue(group[0]).process_wake(worker_id),
        ]
        for group in by_slot.values()
    ]


def list_name(reply: tuple[str | bytes, object] | list[str | bytes]) -> str:
    """Return the name of the list a BLPOP reply took its token from."""
    name = reply[0]
    return name.decode() if isinstance(name, bytes) else name


def push_process_tokens(client: SyncClient, groups: Sequence[Sequence[str]]) -> None:
    """Push a token to each group's process list, so a BLPOP on it returns now."""
    with client.pipeline(transaction=False) as pipe:
        for group in groups:
            pipe.rpush(group[-1], 1)
            pipe.pexpire(group[-1], PROCESS_WAKE_TTL_MS)
        pipe.execute()


class SlotWaiters:
    """One thread per slot group, blocking on its lists until closed; any token wakes ``wait``.

    A token taken while nobody waits leaves the event set, so the next ``wait`` returns at once:
    the same as a token left in the list for a single BLPOP. The threads block on ``blocking``,
    a client of their own, closed with them; ``client``, the process's, pushes the tokens that
    stop them (``blocking``'s connections are all held in BLPOPs then).
    """

    def __init__(
        self,
        client: SyncClient,
        blocking: SyncClient,
        groups: Sequence[Sequence[str]],
        translated_errors: Callable[[], AbstractContextManager[None]],
        block_s: float,
    ) -> None:
        self.client = client
        self.blocking = blocking
        self.groups = groups
        self.block_s = block_s  # one BLPOP (idle_block_s)
        self.translated_errors = translated_errors
        self.woken = threading.Event()
        self.closing = threading.Event()
        self.error: Exception | None = None  # raised by the next ``wait``, in the fetcher
        self._lists: set[str] = set()  # the lists tokens were taken from, for the next wait
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._block, args=(keys,), name=f"threadmill-wake-{index}")
            for index, keys in enumerate(groups, start=1)
        ]
        for thread in self.threads:
            thread.start()

    def _block(self, keys: Sequence[str]) -> None:
        while not self.closing.is_set():
            try:
                with self.translated_errors():
                    reply = self.blocking.blpop(list(keys), timeout=self.block_s)
            except BrokerUnavailable as exc:
                # A node away (a Redis Cluster primary down) is the fetcher's to say, per queue,
                # as its refills meet it: handed on, each retry here logged "Fetch failed" again,
                # every few seconds for as long as the node was down.
                if not unreachable(exc):
                    self.error = exc  # the fetcher logs it and backs off
                    self.woken.set()
                self.closing.wait(RETRY_S)  # this waiter tries again
                continue
            except Exception as exc:  # a bug: the fetcher's crash handling stops the process
                self.error = exc
                self.woken.set()
                return
            if reply is not None:
                with self._lock:
                    self._lists.add(list_name(reply))
                self.woken.set()

    def wait(self, timeout_s: float) -> frozenset[str] | None:
        """Block until a token arrives or ``timeout_s`` passes; return the lists tokens were
        taken from since the last wait (empty after a waiter's error), None if none came."""
        if not self.woken.wait(timeout_s):
            return None
        self.woken.clear()  # before the caller acquires: a later token sets it again
        with self._lock:
            lists, self._lists = frozenset(self._lists), set()
        error, self.error = self.error, None
        if error is not None:
            raise error
        return lists

    def close(self) -> None:
        """Stop and join every waiter, their BLPOPs returning on the pushed tokens; close
        their client."""
        self.closing.set()
        with suppress(BrokerUnavailable), self.translated_errors():
            push_process_tokens(self.client, self.groups)
        for thread in self.threads:
            thread.join()
        self.blocking.close()


type WaitKey = tuple[tuple[str, ...], str]  # (queues, worker_id)


class IdleWaits:
    """Block idle fetchers: one BLPOP for one slot, else the ``SlotWaiters`` of that process."""

    def __init__(
        self,
        client: Callable[[], SyncClient],
        blocking_client: Callable[[int], SyncClient],
        translated_errors: Callable[[], AbstractContextManager[None]],
        socket_timeout_s: float | None,
    ) -> None:
        self.client = client  # the broker's lazily built client
        self.blocking_client = blocking_client  # a new client for that many waiter threads
        self.translated_errors = translated_errors
        self.block_s = idle_block_s(socket_timeout_s)
        self._waiters: dict[WaitKey, SlotWaiters] = {}
        self._closed: set[WaitKey] = set()
        self._lock = threading.Lock()

    def wait(
        self, key: WaitKey, groups: list[list[str]], timeout_s: float
    ) -> frozenset[str] | None:
        """Block until a token arrives in any group or ``timeout_s`` passes; return the lists
        the tokens came from (which queues got work), None if none came.

        One BLPOP blocks no longer than fits the socket timeout, so a long ``timeout_s`` may
        end early: the caller looks for work, then waits again.
        """
        if len(groups) == 1:
            block_s = max(SHORTEST_BLOCK_S, min(timeout_s, self.block_s))
            with self.translated_errors():
                reply = self.client().blpop(groups[0], timeout=block_s)
            return None if reply is None else frozenset([list_name(reply)])
        with self._lock:
            if key in self._closed:
                return frozenset()  # the process is stopping: its fetcher must not block again
            if key not in self._waiters:
                self._waiters[key] = SlotWaiters(
                    self.client(),
                    self.blocking_client(len(groups)),
                    groups,
                    self.translated_errors,
                    self.block_s,
                )
            waiters = self._waiters[key]
        return waiters.wait(timeout_s)

    def wake(self, key: WaitKey, groups: list[list[str]]) -> None:
        """Wake the process's fetcher for good: stop its waiters, or push its stop token."""
        with self._lock:
            self._closed.add(key)
            waiters = self._waiters.pop(key, None)
        if waiters is not None:
            waiters.close()
            return
        with self.translated_errors():
            push_process_tokens(self.client(), groups)
