"""The chaos monkey: a thread that SIGKILLs worker processes, restarts Redis and drops clients."""

import os
import random
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.servers.redis_server import RedisProcess
from tests.support import Command

SPAWNED = re.compile(r"Worker process spawned slot=(\d+) pid=(\d+)")
MIN_AGE_S = 1.0  # a process is killed only once it has run this long (it holds tasks by then)
FAST_FAILURE_S = 10.0  # the supervisor counts a death this soon after spawn as failing at start
MAX_FAST_KILLS = 4  # consecutive fast kills per slot; the supervisor gives up at 5
MAX_REDIS_DOWN_S = 0.5  # kept well under lease_ttl: a longer outage may expire live leases


@dataclass(slots=True)
class ChaosCounts:
    """What the monkey did, for the report."""

    kills: int = 0
    redis_restarts: int = 0
    client_kills: int = 0
    killed_pids: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Slot:
    pid: int
    seen_at: float
    fast_kills: int = 0


def _is_live_child(pid: int, parent: int) -> bool:
    """Tell whether ``pid`` is a running (not zombie) child of ``parent``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] != "Z" and int(fields[1]) == parent


class ChaosMonkey(threading.Thread):
    """Break things at random moments until stopped; every choice comes from ``rng``."""

    def __init__(
        self,
        rng: random.Random,
        worker: Command,
        server: RedisProcess,
        *,
        max_redis_restarts: int,
        pause_s: tuple[float, float] = (0.2, 0.9),
    ) -> None:
        super().__init__(name="chaos-monkey")
        self.rng = rng
        self.worker = worker
        self.server = server
        self.max_redis_restarts = max_redis_restarts
        self.pause_s = pause_s
        self.counts = ChaosCounts()
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self._slots: dict[int, _Slot] = {}

    def stop(self) -> None:
        self.stopping.set()
        self.join()
        if self.error is not None:
            raise self.error

    def run(self) -> None:
        try:
            while not self.stopping.wait(self.rng.uniform(*self.pause_s)):
                self._act()
        except BaseException as exc:  # reported by stop() in the test's thread
            self.error = exc

    def _act(self) -> None:
        roll = self.rng.random()
        if roll < 0.12 and self.counts.redis_restarts < self.max_redis_restarts:
            self._restart_redis()
        elif roll < 0.35:
            self._kill_clients()
        else:
            self._kill_worker()

    def _live_slots(self) -> dict[int, _Slot]:
        """Track the newest process of each slot, and when the monkey first saw it."""
        newest = {int(slot): int(pid) for slot, pid in SPAWNED.findall(self.worker.log)}
        for index, pid in newest.items():
            slot = self._slots.get(index)
            if slot is None or slot.pid != pid:
                # A process the monkey did not kill was recycled: the supervisor resets the
                # slot's crash streak then, and so does the monkey.
                killed = slot is not None and slot.pid in self.counts.killed_pids
                self._slots[index] = _Slot(pid, time.monotonic(), slot.fast_kills if killed else 0)
        parent = self.worker.process.pid
        return {i: s for i, s in self._slots.items() if _is_live_child(s.pid, parent)}

    def _kill_worker(self) -> None:
        now = time.monotonic()
        candidates = [
            slot
            for slot in self._live_slots().values()
            if now - slot.seen_at >= MIN_AGE_S
            and (slot.fast_kills < MAX_FAST_KILLS or now - slot.seen_at >= FAST_FAILURE_S)
        ]
        if not candidates:
            return
        victim = self.rng.choice(candidates)
        # Count as the supervisor does: a death soon after spawn extends the streak.
        fast = now - victim.seen_at < FAST_FAILURE_S
        victim.fast_kills = victim.fast_kills + 1 if fast else 1
        os.kill(victim.pid, signal.SIGKILL)
        self.counts.kills += 1
        self.counts.killed_pids.add(victim.pid)

    def _kill_clients(self) -> None:
        client = redis.Redis.from_url(self.server.url)
        try:
            client.client_kill_filter(_type="normal", skipme=True)
            self.counts.client_kills += 1
        except redis.ConnectionError:
            pass  # Redis is restarting under us: nothing to drop
        finally:
            client.close()

    def _restart_redis(self) -> None:
        self.server.kill()
        self.counts.redis_restarts += 1
        self.stopping.wait(self.rng.uniform(0, MAX_REDIS_DOWN_S))  # stay down a moment
        self.server.start()
