"""A throwaway Redis Cluster for the tests: 3 primaries and 3 replicas on loopback ports.

Created the way an operator would, with ``redis-cli --cluster create``; a node can be killed
(SIGKILL) and started again on its port and directory, where it rejoins as a replica.
"""

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import redis
from redis.crc import key_slot

from .redis_server import RedisProcess, free_port

NODE_TIMEOUT_MS = 1000  # a primary unreachable this long is failed over: fast tests


def wait_for(condition: Callable[[], object], what: str, timeout_s: float = 60.0) -> None:
    """Poll ``condition`` until it holds; the default deadline allows a loaded 2-core machine."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if condition():
                return
        except redis.RedisError:
            pass  # a node still starting or failing over: ask again
        if time.monotonic() > deadline:
            raise RuntimeError(f"the test servers never got {what} within {timeout_s}s")
        time.sleep(0.05)  # polling a cluster that settles by itself, with a deadline


def info(node: RedisProcess, section: str) -> dict[str, object]:
    client = redis.Redis(port=node.port, decode_responses=True, socket_timeout=2)
    try:
        return client.info(section)
    finally:
        client.close()


def cluster_state(node: RedisProcess) -> str:
    client = redis.Redis(port=node.port, decode_responses=True, socket_timeout=2)
    try:
        return str(client.cluster("INFO")["cluster_state"])
    finally:
        client.close()


class LocalCluster:
    """Six redis-server processes in cluster mode, each in its own directory."""

    def __init__(self, directory: Path) -> None:
        self.nodes: list[RedisProcess] = []
        for index in range(6):
            node_dir = directory / f"node{index}"
            node_dir.mkdir()
            self.nodes.append(RedisProcess(node_dir, *self._node_args()))

    @staticmethod
    def _node_args() -> list[str]:
        return [
            *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
            *("--cluster-node-timeout", str(NODE_TIMEOUT_MS), "--appendonly", "no"),
            *("--repl-diskless-sync-delay", "0"),  # a replica syncs at once, not after 5 s
            # The bus port defaults to port + 10000, past 65535 for high ports.
            *("--cluster-port", str(free_port())),
        ]

    @property
    def url(self) -> str:
        return self.live()[0].url

    def live(self) -> list[RedisProcess]:
        return [node for node in self.nodes if node.process is not None]

    def create(self) -> None:
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *addresses,
                "--cluster-replicas",
                "1",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
        )
        self.wait_until_healthy()

    def wait_until_healthy(self) -> None:
        """Wait until every live node says ok and each primary has an online replica."""

        def healthy() -> bool:
            if any(cluster_state(node) != "ok" for node in self.live()):
                return False
            primaries = [n for n in self.live() if info(n, "replication")["role"] == "master"]
            return (
                len(primaries) == 3
                and all(int(info(n, "replication")["connected_slaves"]) >= 1 for n in primaries)
                and all(self._replica_synced(n) for n in self.live() if n not in primaries)
            )

        wait_for(healthy, "every slot served with a synced replica")

    @staticmethod
    def _replica_synced(node: RedisProcess) -> bool:
        replication = info(node, "replication")
        return replication.get("master_link_status") == "up" and not int(
            replication.get("master_sync_in_progress", 0)
        )

    def primary_for(self, key: str) -> RedisProcess:
        """Return the node that serves ``key``'s slot now."""
        serving = self._serving(key)
        if serving is None:
            raise RuntimeError(f"no node serves slot {key_slot(key.encode())} of {key!r}")
        return serving

    def _serving(self, key: str) -> RedisProcess | None:
        """Return the node that serves ``key``'s slot now, None while no node lists it (in a
        failover, before the replica took it over)."""
        slot = key_slot(key.encode())
        client = redis.Redis(port=self.live()[0].port, decode_responses=True)
        try:
            for start, end, primary, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    port = int(primary[1])
                    return next(node for node in self.nodes if node.port == port)
        finally:
            client.close()
        return None

    def kill_primary_of(self, key: str) -> RedisProcess:
        """SIGKILL the primary of ``key`` and wait until its replica serves the slot."""
        victim = self.primary_for(key)
        victim.kill()
        wait_for(
            lambda: (
                self._serving(key) not in (None, victim)
                and all(cluster_state(node) == "ok" for node in self.live())
            ),
            f"a failover of {key!r}'s slot",
        )
        return victim

    def restart(self, node: RedisProcess) -> None:
        """Start a killed node again; it rejoins as a replica of its slot's new primary."""
        node.start()
        self.wait_until_healthy()

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()


@contextmanager
def local_cluster() -> Iterator[LocalCluster]:
    if shutil.which("redis-cli") is None:
        raise RuntimeError("a local Redis Cluster needs redis-cli on PATH (--cluster create)")
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tm-cluster-")))
        cluster = LocalCluster(directory)
        stack.callback(cluster.stop)
        cluster.create()
        yield cluster
