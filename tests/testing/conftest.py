"""What every test of the test helpers starts from."""

from collections.abc import Iterator

import pytest

from . import tasks


@pytest.fixture(autouse=True)
def no_runs_yet() -> Iterator[None]:
    """Start and leave each test with no task runs recorded (tasks.runs is module state)."""
    tasks.runs.clear()
    yield
    tasks.runs.clear()
