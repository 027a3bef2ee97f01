"""A TCP delay proxy for latency-bound runs.

    python -m benchmarks.harness.proxy LISTEN TARGET ONE_WAY_MS

Every chunk is forwarded ``ONE_WAY_MS`` after it arrived, in order, in both directions, so a
request/reply pays about twice that. On SIGTERM it prints {"requests": N}: the chunks clients
sent, which is the number of round trips they made (a pipeline is one write).
"""

import asyncio
import json
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from tests.servers.redis_server import free_port

from ..peers.base import REPO_DIR
from .waiting import poll_until

CHUNK_BYTES = 65536
PING_REQUESTS = 51  # ping_ms() sends these through the proxy before the worker starts


class DelayProxy:
    """Forward 127.0.0.1:listen_port to 127.0.0.1:target_port with a fixed one-way delay."""

    def __init__(self, target_port: int, one_way_s: float) -> None:
        self.target_port = target_port
        self.one_way_s = one_way_s
        self.requests = 0

    async def pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: bool
    ) -> None:
        """Copy reader to writer, each chunk delayed by one_way_s; close writer at EOF."""
        loop = asyncio.get_running_loop()
        pending: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def forward() -> None:
            while (item := await pending.get()) is not None:
                due, data = item
                if (wait := due - loop.time()) > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            writer.close()

        forwarder = asyncio.create_task(forward())
        try:
            while data := await reader.read(CHUNK_BYTES):
                self.requests += upstream
                pending.put_nowait((loop.time() + self.one_way_s, data))
        except ConnectionError:
            pass
        pending.put_nowait(None)
        await forwarder

    async def handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        for stream in (client_w, server_w):
            stream.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(
            self.pump(client_r, server_w, upstream=True),
            self.pump(server_r, client_w, upstream=False),
            return_exceptions=True,
        )

    async def serve(self, listen_port: int) -> None:
        server = await asyncio.start_server(self.handle, "127.0.0.1", listen_port)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        # Clients may still hold connections (a test's own pool): drop them rather than wait.
        server.close()
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()
        print(json.dumps({"requests": self.requests}), flush=True)


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclass(slots=True)
class ProxyLink:
    """A running proxy: its URL, its measured round trip, and (once stopped) its request count."""

    url: str
    ping_ms: float = 0.0  # median PING round trip through the proxy
    requests: int | None = None


def ping_ms(url: str, count: int = 50) -> float:
    """Median PING round trip to ``url``, in milliseconds."""
    with redis.Redis.from_url(url) as client:
        client.ping()
        times = []
        for _ in range(count):
            started = time.perf_counter()
            client.ping()
            times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


@contextmanager
def delay_proxy(target_port: int, one_way_ms: float) -> Iterator[ProxyLink]:
    """Run the proxy in a subprocess in front of 127.0.0.1:``target_port``."""
    listen_port = free_port()
    argv = [sys.executable, "-m", "benchmarks.harness.proxy", str(listen_port), str(target_port)]
    process = subprocess.Popen(
        [*argv, str(one_way_ms)], cwd=REPO_DIR, stdout=subprocess.PIPE, text=True
    )
    link = ProxyLink(url=f"redis://127.0.0.1:{listen_port}/0")
    try:
        poll_until(lambda: port_open(listen_port), f"the delay proxy listening on {listen_port}")
        link.ping_ms = ping_ms(link.url)
        yield link
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=10)
    if output.strip():
        link.requests = json.loads(output.strip().splitlines()[-1])["requests"] - PING_REQUESTS


def main() -> None:
    listen_port, target_port, one_way_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    asyncio.run(DelayProxy(target_port, one_way_ms / 1000).serve(listen_port))


if __name__ == "__main__":
    main()
