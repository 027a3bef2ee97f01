"""A TCP proxy that adds latency: each chunk is forwarded ``delay_s`` after it arrived."""

import asyncio
import threading
from types import TracebackType

from testproject.redis_server import free_port


async def _forward(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float
) -> None:
    """Copy ``reader`` to ``writer``, each chunk held back ``delay_s`` (latency, not bandwidth)."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, data = await chunks.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not data:
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(65536):
            chunks.put_nowait((loop.time() + delay_s, data))
        chunks.put_nowait((loop.time() + delay_s, b""))
        await sender
    except (ConnectionError, asyncio.CancelledError):
        sender.cancel()
    finally:
        writer.close()


class DelayProxy:
    """Listen on a free port and forward to ``target_port`` with ``delay_s`` each way."""

    def __init__(self, target_port: int, delay_s: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.port = free_port()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name="proxy")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(
            "127.0.0.1", self.target_port
        )
        await asyncio.gather(
            _forward(reader, upstream_writer, self.delay_s),
            _forward(upstream_reader, writer, self.delay_s),
        )

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

    def __enter__(self) -> "DelayProxy":
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"proxy on port {self.port} did not start")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._loop is not None
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
