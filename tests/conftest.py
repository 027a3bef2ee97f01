"""Shared fixtures: a real Redis, a key prefix per test, a broker, and leak guards."""

import asyncio
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from django.dispatch import Signal
from django.test import override_settings

from django_threadmill.aliases import threadmill_backend
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import (
    TASKS_LOGGER_NAME,
    TaskResult,
    task_backends,
    task_enqueued,
    task_finished,
)
from django_threadmill.worker.logs import LOGGER_NAME
from django_threadmill.worker.receivers_thread import receivers_thread
from tests.servers.redis_server import DURABLE, RedisProcess, redis_process, session_redis_url
from tests.support import close_pipelines
from tests.worker.conftest import start_worker

__all__ = ["start_worker"]  # every package may run the real worker command
# A project of its own, with its own settings: tests/testing/test_sample_project.py runs it.
collect_ignore = ["sample_project"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the tests marked ``slow`` unless THREADMILL_SLOW is set: long runs whose short
    versions CI runs (docs/reliability.md, Running the suite)."""
    if os.environ.get("THREADMILL_SLOW"):
        return
    opt_in = pytest.mark.skip(reason="a long run: THREADMILL_SLOW=1 runs it")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(opt_in)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with session_redis_url() as url:
        yield url


@pytest.fixture
def durable_redis() -> Iterator[RedisProcess]:
    """A redis-server of the test's own, writing every command to its AOF: for tests that kill
    it. A module opts in by overriding ``redis_url`` to return its URL."""
    with redis_process(*DURABLE) as server:
        yield server


@pytest.fixture
def own_redis() -> Iterator[RedisProcess]:
    """A redis-server of the test's own, for a test that pauses, fills or reconfigures it. A
    module opts in by overriding ``redis_url`` to return its URL."""
    with redis_process() as server:
        yield server


@pytest.fixture
def key_prefix() -> str:
    return f"tmtest-{uuid.uuid4().hex[:12]}"


def tasks_setting(url: str, prefix: str, **options: object) -> dict[str, object]:
    return {
        "default": {
            "BACKEND": "django_threadmill.backend.ThreadmillTaskBackend",
            "LOCATION": url,
            "QUEUES": ["default", "emails", "reports"],
            "OPTIONS": {"key_prefix": prefix, **options},
        }
    }


@pytest.fixture
def tasks_options() -> dict[str, object]:
    """Extra OPTIONS for the test's backend; override in a module to change them."""
    return {}


@pytest.fixture(autouse=True)
def threadmill_settings(
    redis_url: str, key_prefix: str, tasks_options: dict[str, object]
) -> Iterator[None]:
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, **tasks_options)):
        yield
    close_pipelines(key_prefix)


def serving(queues: list[str]) -> Callable[..., Iterator[None]]:
    """A ``threadmill_settings`` whose backend serves ``queues``: a module that needs other
    QUEUES assigns it to that name (``threadmill_settings = serving(QUEUES)``)."""

    @pytest.fixture(autouse=True)
    def threadmill_settings(
        redis_url: str, key_prefix: str, tasks_options: dict[str, object]
    ) -> Iterator[None]:
        setting = tasks_setting(redis_url, key_prefix, **tasks_options)
        setting["default"]["QUEUES"] = queues  # type: ignore[index]
        with override_settings(TASKS=setting):
            yield
        close_pipelines(key_prefix)

    return threadmill_settings


@pytest.fixture
def bulk(redis_url: str, key_prefix: str) -> Iterator[ThreadmillTaskBackend]:
    """A second alias, "bulk", beside "default" on the same Redis with the same queues."""
    tasks = tasks_setting(redis_url, key_prefix)
    with override_settings(TASKS={**tasks, "bulk": tasks["default"]}):
        yield threadmill_backend("bulk")


@pytest.fixture
def backend(threadmill_settings: None) -> ThreadmillTaskBackend:
    found = task_backends["default"]
    assert isinstance(found, ThreadmillTaskBackend)
    return found


@pytest.fixture
def broker(backend: ThreadmillTaskBackend) -> Broker:
    return backend.broker


@pytest.fixture
def redis_client(redis_url: str, key_prefix: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    keys = list(client.scan_iter(f"{key_prefix}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture
def raw_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client that writes bytes as given and reads them back undecoded: for records holding
    bytes that are not UTF-8, which only something other than django-threadmill writes."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture(scope="session", autouse=True)
def shared_sync_thread() -> None:
    """Start asgiref's process-wide sync thread before any test, so the leak guard below never
    blames the test that first sends a signal from async code (``Signal.asend`` runs sync
    receivers on that thread, which lives as long as the process); and the executor's, where
    ``arun`` has them run (worker/receivers_thread.py)."""

    async def start_both() -> None:
        await sync_to_async(lambda: None)()
        with receivers_thread():
            await sync_to_async(lambda: None)()

    asyncio.run(start_both())


THREAD_END_S = 10.0  # what a thread the test started may take to end after it, on a loaded box


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves a thread running. One on its way out (the loop thread of a drain
    an interrupt cut short, winding down) is waited for, up to THREAD_END_S: on a loaded
    machine it was still alive as the test ended, and the test failed for it."""
    before = set(threading.enumerate())
    yield

    def running() -> list[str]:
        return [t.name for t in threading.enumerate() if t not in before and t.is_alive()]

    deadline = time.monotonic() + THREAD_END_S
    while (leaked := running()) and time.monotonic() < deadline:
        time.sleep(0.01)  # polling with a deadline
    assert not leaked, f"test leaked threads: {leaked}"


@pytest.fixture
def tasks_logger_at(request: pytest.FixtureRequest) -> Iterator[None]:
    """Set the django.tasks logger to the level the test is parametrised with (indirect)."""
    tasks_logger = logging.getLogger(TASKS_LOGGER_NAME)
    level = tasks_logger.level
    tasks_logger.setLevel(request.param)
    yield
    tasks_logger.setLevel(level)


@pytest.fixture
def logging_put_back() -> Iterator[None]:
    """Put back what a command's logging setup (worker/logs.py) changes in this process: the
    levels, and the formatters of the handlers; for tests that run it with call_command."""
    loggers = [logging.getLogger(name) for name in (LOGGER_NAME, TASKS_LOGGER_NAME)]
    levels = [logger.level for logger in loggers]
    formatters = [(handler, handler.formatter) for handler in loggers[0].handlers]
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)
    for handler, formatter in formatters:
        handler.setFormatter(formatter)


def _collected[T](signal: Signal, kept: Callable[[type, TaskResult], T]) -> Iterator[list[T]]:
    """Collect what ``kept`` takes of each ``signal`` sent while the test runs."""
    seen: list[T] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(kept(sender, task_result))

    signal.connect(receiver)
    yield seen
    signal.disconnect(receiver)


@pytest.fixture
def enqueued() -> Iterator[list[tuple[type, TaskResult]]]:
    """Collect every task_enqueued signal as (sender, task_result)."""
    yield from _collected(task_enqueued, lambda sender, result: (sender, result))


@pytest.fixture
def finished() -> Iterator[list[TaskResult]]:
    """Collect the task_result of every task_finished sent while the test runs."""
    yield from _collected(task_finished, lambda sender, result: result)
