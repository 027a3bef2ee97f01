"""A throwaway Sentinel setup for the tests: 1 primary, 1 replica and 3 sentinels on loopback.

The primary can be killed (SIGKILL); the sentinels promote the replica, and the old primary,
started again, is made a replica of the new one (REPLICAOF, as an operator would).
"""

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import redis

from .redis_cluster import info, wait_for
from .redis_server import RedisProcess, redis_server_binary

SERVICE = "mymaster"
DOWN_AFTER_MS = 1000  # a primary silent this long is failed over: fast tests
FAST_SYNC = ("--repl-diskless-sync-delay", "0")  # a replica syncs at once, not after 5 s


class SentinelProcess(RedisProcess):
    """A redis-server in sentinel mode; its config file is its own (sentinels rewrite it)."""

    def __init__(self, directory: Path, primary_port: int) -> None:
        super().__init__(directory)
        self.config = directory / "sentinel.conf"
        self.config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {directory}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary_port} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} 5000\n"
        )

    def arguments(self) -> list[str]:
        return [redis_server_binary(), str(self.config), "--sentinel"]


class LocalSentinel:
    """One primary, one replica, three sentinels watching them as ``SERVICE``."""

    def __init__(self, directory: Path) -> None:
        for name in ("primary", "replica", "s0", "s1", "s2"):
            (directory / name).mkdir()
        self.primary = RedisProcess(directory / "primary", *FAST_SYNC)
        self.replica = RedisProcess(
            directory / "replica", *FAST_SYNC, "--replicaof", "127.0.0.1", str(self.primary.port)
        )
        self.sentinels = [
            SentinelProcess(directory / f"s{index}", self.primary.port) for index in range(3)
        ]

    @property
    def servers(self) -> list[RedisProcess]:
        return [self.primary, self.replica]

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", sentinel.port) for sentinel in self.sentinels]

    def start(self) -> None:
        for process in [*self.servers, *self.sentinels]:
            process.start()
        self.wait_until_replicated(self.primary)

    def current_primary(self) -> RedisProcess:
        client = redis.Redis(port=self.sentinels[0].port, decode_responses=True)
        try:
            # Not client.sentinel_get_master_addr_by_name: on a plain Redis client redis-py 6.4
            # passes its own options (once=, return_responses=) to a reply parser that takes
            # none, a TypeError (7.4 and 8.2 take them). The parser is applied all the same.
            _, port = client.execute_command("SENTINEL GET-MASTER-ADDR-BY-NAME", SERVICE)
        finally:
            client.close()
        return next(server for server in self.servers if server.port == int(port))

    def wait_until_replicated(self, primary: RedisProcess, *, by_sentinels: bool = True) -> None:
        """Wait until ``primary`` has a synced replica (and, if asked, every sentinel knows it)."""

        def ready() -> bool:
            replica = info(primary, "replication").get("slave0")
            online = isinstance(replica, dict) and replica.get("state") == "online"
            return online and (
                not by_sentinels or all(self._sees_replica(s) for s in self.sentinels)
            )

        wait_for(ready, f"a synced replica of port {primary.port}")

    @staticmethod
    def _sees_replica(sentinel: RedisProcess) -> bool:
        client = redis.Redis(port=sentinel.port, decode_responses=True)
        try:
            replicas = client.sentinel_slaves(SERVICE)
            return any("s_down" not in replica["flags"] for replica in replicas)
        finally:
            client.close()

    def names(self, primary: RedisProcess) -> bool:
        """Tell whether every sentinel names ``primary`` as the primary."""
        for sentinel in self.sentinels:
            client = redis.Redis(port=sentinel.port, decode_responses=True)
            try:
                _, port = client.execute_command("SENTINEL GET-MASTER-ADDR-BY-NAME", SERVICE)
            finally:
                client.close()
            if int(port) != primary.port:
                return False
        return True

    def fail_over(self, *, demote: bool = True) -> RedisProcess:
        """SENTINEL FAILOVER, the old primary alive; return it once it is a replica. With
        ``demote``, it is made one as soon as every sentinel names the new primary, as the
        sentinels would themselves at their next look at it (10 s or more here)."""
        old = self.current_primary()
        self.wait_until_replicated(old)
        sentinel = redis.Redis(port=self.sentinels[0].port)
        try:
            # NOGOODSLAVE until the sentinel's own look at the replica is recent enough: asked
            # again (wait_for passes over Redis's errors), not failed (once in a CI run).
            wait_for(
                lambda: sentinel.execute_command("SENTINEL", "FAILOVER", SERVICE),
                "a replica the sentinels can promote",
            )
        finally:
            sentinel.close()
        wait_for(lambda: self.current_primary() is not old, "the replica promoted")
        if demote:
            new = self.current_primary()
            wait_for(lambda: self.names(new), "every sentinel naming the new primary")
            client = redis.Redis(port=old.port)
            try:
                client.replicaof("127.0.0.1", new.port)
            finally:
                client.close()
        wait_for(lambda: info(old, "replication").get("role") == "slave", "the old one demoted")
        return old

    def kill_primary(self) -> RedisProcess:
        """SIGKILL the primary; wait until the sentinels have promoted the replica."""
        victim = self.current_primary()
        victim.kill()
        wait_for(lambda: self.current_primary() is not victim, "the replica promoted")
        return victim

    def restart(self, server: RedisProcess) -> None:
        """Start a killed server again as a replica of the new primary, as an operator would.

        The sentinels would turn it into one by themselves, but only after their next look at
        it (10 s or more under load); the test needs a replica for WAIT, not their timing.
        """
        server.start()
        primary = self.current_primary()
        client = redis.Redis(port=server.port)
        try:
            client.replicaof("127.0.0.1", primary.port)
        finally:
            client.close()
        self.wait_until_replicated(primary, by_sentinels=False)

    def stop(self) -> None:
        for process in [*self.sentinels, *self.servers]:
            process.kill()


@contextmanager
def local_sentinel() -> Iterator[LocalSentinel]:
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tm-sentinel-")))
        setup = LocalSentinel(directory)
        stack.callback(setup.stop)
        setup.start()
        yield setup
