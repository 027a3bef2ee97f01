"""The readers a result is read back through, for the tests that read one every way."""

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task, TaskResult

type Read = Callable[[str], TaskResult]
type Enqueue = Callable[..., TaskResult]


def read_one_of_many(backend: ThreadmillTaskBackend, result_id: str) -> TaskResult:
    [found] = backend.pipeline.get_results([result_id])
    assert found is not None
    return found


@pytest.fixture(params=["get_result", "aget_result", "get_results"])
def read(request: pytest.FixtureRequest, backend: ThreadmillTaskBackend) -> Read:
    """Read a result through the sync API, the native async one, or a batch read."""
    if request.param == "get_result":
        return backend.get_result
    if request.param == "get_results":
        return lambda result_id: read_one_of_many(backend, result_id)
    return lambda result_id: asyncio.run(backend.aget_result(result_id))


@pytest.fixture(params=["enqueue", "aenqueue"])
def enqueue(request: pytest.FixtureRequest) -> Enqueue:
    """Enqueue through the sync API or the native async one: both must behave alike."""

    def through(task: Task, *args: Any, **kwargs: Any) -> TaskResult:
        if request.param == "enqueue":
            return task.enqueue(*args, **kwargs)
        return asyncio.run(task.aenqueue(*args, **kwargs))

    return through
