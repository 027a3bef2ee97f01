"""Enqueue in a process forked after the parent enqueued (gunicorn --preload, prefork servers),
and an aenqueue whose reply was lost just before Redis went away."""

import asyncio
import multiprocessing
import os
import selectors
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from django.test import override_settings
from redis.connection import Connection

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task_backends, task_enqueued
from django_threadmill.exceptions import MaybeApplied
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.support import wait_until

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)

CHILD_TIMEOUT_S = 20.0


def exit_code_of(pid: int, timeout_s: float = CHILD_TIMEOUT_S) -> int | str:
    """Wait for child ``pid``; return its exit code, or "hung" (killed) past the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)  # polling with a deadline, not synchronising
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"


def in_child(body: Callable[[], bool]) -> int:
    """Fork; in the child run ``body`` and exit 0 if it returned True, else 1."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if body() else 1
        finally:
            os._exit(code)
    return pid


def stored(argument: str, result: TaskResult) -> bool:
    """Tell whether ``result`` reads back from Redis as READY with ``argument``: a read on a
    socket shared with another process could get that process's reply instead."""
    read = echo.get_result(result.id)
    return read.status == TaskResultStatus.READY and read.args == [argument]


def enqueued_here(argument: str) -> bool:
    return stored(argument, echo.enqueue(argument))


def aenqueued_here(argument: str) -> bool:
    return stored(argument, asyncio.run(echo.aenqueue(argument)))


@pytest.fixture
def reply_held() -> Iterator[tuple[threading.Event, threading.Event]]:
    """Hold the reply of the parent's next Redis call from a thread named test-fork-*:
    (sent, release). The request reaches Redis; the thread that sent it waits before reading
    the reply, its socket unread."""
    sent, release = threading.Event(), threading.Event()
    parent = os.getpid()
    original = Connection.read_response

    def read_response(self: Connection, *args: Any, **kwargs: Any) -> Any:
        holds = threading.current_thread().name.startswith("test-fork")
        if holds and os.getpid() == parent and not sent.is_set():
            sent.set()
            release.wait()
        return original(self, *args, **kwargs)

    Connection.read_response = read_response  # type: ignore[method-assign]
    try:
        yield sent, release
    finally:
        release.set()
        Connection.read_response = original  # type: ignore[method-assign]


def test_a_child_forked_mid_send_stores_its_own_task_and_the_parent_its_buffer(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    reply_held: tuple[threading.Event, threading.Event],
) -> None:
    echo.enqueue("registers the queue: the next batch is one script call")
    sent, release = reply_held
    line = backend.pipeline.enqueuer._threads._line  # no public view of the line
    with ThreadPoolExecutor(4, thread_name_prefix="test-fork") as threads:
        first = threads.submit(echo.enqueue, "in flight")
        assert sent.wait(10)
        buffered = [threads.submit(echo.enqueue, f"buffered {n}") for n in range(3)]
        wait_until(lambda: len(line._waiting) == 3, "three calls buffered behind the send")
        # The child neither waits for the parent's sender, nor reads its reply, nor sends
        # (or drops) the parent's buffered calls.
        pid = in_child(lambda: enqueued_here("from the child"))
        assert exit_code_of(pid) == 0
        release.set()
        parents = [call.result(10) for call in [first, *buffered]]
    ready = redis_client.zrange(backend.broker.queue_keys("default").ready, 0, -1)
    assert sorted(echo.get_result(i).args[0] for i in ready) == sorted(
        ["registers the queue: the next batch is one script call", "in flight"]
        + [f"buffered {n}" for n in range(3)]
        + ["from the child"]
    )
    assert {r.id for r in parents} < set(ready)


def test_aenqueue_in_a_child_forked_while_a_loop_makes_its_client(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    making, release = threading.Event(), threading.Event()
    clients = backend.broker._async_clients  # no public view of the per-loop clients
    make = clients._make
    parent = os.getpid()

    def slow_make() -> Any:
        if os.getpid() == parent and not release.is_set():
            making.set()
            release.wait()
        return make()

    monkeypatch.setattr(clients, "_make", slow_make)
    with ThreadPoolExecutor(1, thread_name_prefix="test-fork") as threads:
        call = threads.submit(asyncio.run, echo.aenqueue("parent"))
        assert making.wait(10)  # that thread holds the lock of the per-loop clients
        pid = in_child(lambda: aenqueued_here("child"))
        code = exit_code_of(pid)
        release.set()
        call.result(10)
    assert code == 0


def test_aenqueue_heard_in_a_child_forked_after_the_parent_announced(
    backend: ThreadmillTaskBackend,
) -> None:
    heard: list[str] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        heard.append(task_result.args[0])

    task_enqueued.connect(receiver)
    try:
        # Announced on asgiref's sync thread, which the child does not inherit.
        asyncio.run(echo.aenqueue("parent"))
        pid = in_child(lambda: aenqueued_here("child") and heard[-1] == "child")
        assert exit_code_of(pid) == 0
    finally:
        task_enqueued.disconnect(receiver)
    assert heard == ["parent"]


def test_a_child_of_a_process_whose_loop_runs_on_uses_connections_of_its_own(
    backend: ThreadmillTaskBackend,
) -> None:
    """An ASGI-like parent: one loop running in a thread, its connections open, forks a
    multiprocessing child (the 'fork' start method) that enqueues both ways and exits."""
    loop = asyncio.new_event_loop()
    with ThreadPoolExecutor(1, thread_name_prefix="test-fork-loop") as runner:
        running = runner.submit(loop.run_forever)
        try:
            in_loop = asyncio.run_coroutine_threadsafe(echo.aenqueue("parent before"), loop)
            echo.enqueue("parent, sync")
            in_loop.result(10)
            child = multiprocessing.get_context("fork").Process(target=child_enqueues_both_ways)
            child.start()
            child.join(CHILD_TIMEOUT_S)
            assert child.exitcode == 0
            after = asyncio.run_coroutine_threadsafe(echo.aenqueue("parent after"), loop)
            assert stored("parent after", after.result(10))
            assert enqueued_here("parent, sync, after")
        finally:
            loop.call_soon_threadsafe(loop.stop)
            running.result(10)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


def child_enqueues_both_ways() -> None:
    if not (enqueued_here("child, sync") and aenqueued_here("child, async")):
        raise SystemExit(1)


class CuttingProxy:
    """A TCP proxy to Redis that, once armed, drops the next reply Redis sends, closes that
    connection and stops listening: a call Redis applied whose reply was lost, then a Redis
    that cannot be reached (it went down right after)."""

    def __init__(self, redis_url: str) -> None:
        address = redis.connection.parse_url(redis_url)
        self._upstream = (address["host"], address["port"])
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._listener.getsockname()[1]}/0"
        self.armed = threading.Event()
        self._wake, self._woken = socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._thread = threading.Thread(target=self._run, name="test-cutting-proxy")

    def __enter__(self) -> "CuttingProxy":
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._woken, selectors.EVENT_READ)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._wake.send(b"x")
        self._thread.join()
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()
        self._wake.close()

    def _run(self) -> None:
        while True:
            for key, _ in self._selector.select():
                if key.fileobj is self._woken:
                    return
                if key.fileobj is self._listener:
                    self._accept()
                else:
                    self._pump(key.fileobj, key.data)  # type: ignore[arg-type]

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        upstream = socket.create_connection(self._upstream)
        self._selector.register(client, selectors.EVENT_READ, (upstream, False))
        self._selector.register(upstream, selectors.EVENT_READ, (client, True))

    def _pump(self, source: socket.socket, data: tuple[socket.socket, bool]) -> None:
        peer, from_redis = data
        chunk = source.recv(65536)
        cut = from_redis and self.armed.is_set()
        if chunk and not cut:
            peer.sendall(chunk)
            return
        for end in (source, peer):
            self._selector.unregister(end)
            end.close()
        if cut:
            self._selector.unregister(self._listener)
            self._listener.close()


async def aenqueue_cut_off(proxy: CuttingProxy) -> TaskResult:
    await echo.aenqueue("registers the queue and opens the loop's connection")
    proxy.armed.set()
    return await echo.aenqueue("applied, reply lost")


def enqueue_cut_off(proxy: CuttingProxy) -> TaskResult:
    echo.enqueue("registers the queue and opens the process's connection")
    proxy.armed.set()
    return echo.enqueue("applied, reply lost")


@pytest.mark.parametrize(
    "cut_off",
    [enqueue_cut_off, lambda proxy: asyncio.run(aenqueue_cut_off(proxy))],
    ids=["enqueue", "aenqueue"],
)
def test_a_reply_lost_then_redis_gone_says_the_task_may_be_stored(
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
    cut_off: Callable[[CuttingProxy], TaskResult],
) -> None:
    with (
        CuttingProxy(redis_url) as proxy,
        override_settings(TASKS=tasks_setting(proxy.url, key_prefix)),
    ):
        with pytest.raises(MaybeApplied) as raised:
            cut_off(proxy)
        broker = task_backends["default"].broker
    # Not "nothing was written": the call was tried again on a fresh connection, which Redis,
    # gone meanwhile, refused; but the first try had been applied.
    [task_id] = raised.value.task_ids
    assert "the call may have been applied before the connection dropped" in str(raised.value)
    assert redis_client.hget(broker.record_key(task_id), "state") == "ready"
