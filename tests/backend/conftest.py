"""The readers a result is read back through, for the tests that read one every way."""

import asyncio
from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult

type Read = Callable[[str], TaskResult]


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
