"""A backend behind Sentinel: the sync and async clients find the primary through redis-py."""

import asyncio
from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.servers.redis_sentinel import LocalSentinel
from tests.support import Command, wait_until, worker

from .conftest import LOCATION, command_env


@pytest.fixture
def running_worker(key_prefix: str, tasks_options: dict[str, object]) -> Iterator[Command]:
    command = worker(LOCATION, key_prefix, extra_env=command_env(tasks_options))
    try:
        command.wait_for_log(r"Worker process started")
        yield command
        command.signal()
        assert command.wait(60) == 0, command.log
    finally:
        command.close()


def test_enqueue_lands_on_the_primary_and_reaches_the_replica(
    backend: ThreadmillTaskBackend, sentinel_setup: LocalSentinel
) -> None:
    result = echo.enqueue("via sentinel")
    assert echo.get_result(result.id).status == TaskResultStatus.READY
    assert backend.broker.server_info()["tcp_port"] == sentinel_setup.current_primary().port


def test_aenqueue_through_the_async_sentinel_client(backend: ThreadmillTaskBackend) -> None:
    async def enqueue() -> str:
        result = await echo.aenqueue("async via sentinel")
        return (await echo.aget_result(result.id)).status

    assert asyncio.run(enqueue()) == TaskResultStatus.READY


def test_worker_runs_tasks_through_sentinel(running_worker: Command) -> None:
    result = echo.enqueue("ran")
    wait_until(lambda: (result.refresh(), result.status)[1] == TaskResultStatus.SUCCESSFUL,
               "the task ran")  # fmt: skip
    assert result.return_value == "ran"
