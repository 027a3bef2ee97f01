"""Tasks an autouse fixture or a ``setup_method`` enqueue before the ``threadmill`` fixture is
set up are named with a fix that works for them.

pytest sets up autouse fixtures before the test's arguments, and an xunit ``setup_method`` or
``setup_function`` before the test's fixtures, so the warning's fix, "list threadmill before it in
the test's arguments", changed nothing: the flush still deleted their tasks. An autouse fixture
asks for ``threadmill`` instead; a ``setup_method``'s enqueue moves into a fixture that does.
"""

import pytest
import redis

from django_threadmill.testing import Threadmill

from . import tasks
from .test_tasks_a_fixture_enqueued_before_threadmill_are_named import setup_warnings

AUTOUSE_FIX = "an autouse fixture is set up before the test's arguments: it asks for threadmill"
SETUP_METHOD_FIX = "a setup_method or setup_function runs before the test's fixtures"


@pytest.fixture(autouse=True)
def enqueues_for_every_test(request: pytest.FixtureRequest, redis_client: redis.Redis) -> None:
    """A project's autouse fixture; under pytest-xdist its task goes to the prefix without the
    worker's name, whose keys ``redis_client`` deletes after the test."""
    if request.node.name == test_an_autouse_fixture_is_told_to_ask_for_threadmill.__name__:
        tasks.record.enqueue("from an autouse fixture")


@pytest.fixture(autouse=True)
def enqueues_under_threadmill(request: pytest.FixtureRequest) -> None:
    """The fix: an autouse fixture that asks for threadmill, set up after its flush."""
    if (
        request.node.name
        == test_an_autouse_fixture_that_asks_for_threadmill_has_its_task_run.__name__
    ):
        request.getfixturevalue("threadmill")
        tasks.record.enqueue("from an autouse fixture asking for threadmill")


def test_an_autouse_fixture_is_told_to_ask_for_threadmill(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    assert threadmill.drain() == 0
    [said] = setup_warnings(caplog)
    assert AUTOUSE_FIX in said


def test_an_autouse_fixture_that_asks_for_threadmill_has_its_task_run(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    assert threadmill.drain() == 1
    assert setup_warnings(caplog) == []


class TestASetupMethod:
    def setup_method(self) -> None:
        tasks.record.enqueue("from setup_method")

    def test_it_is_told_to_enqueue_in_a_fixture_that_asks_for_threadmill(
        self, redis_client: redis.Redis, threadmill: Threadmill, caplog: pytest.LogCaptureFixture
    ) -> None:
        assert threadmill.drain() == 0
        [said] = setup_warnings(caplog)
        assert SETUP_METHOD_FIX in said
        assert "by the fixture" not in said  # pytest's stand-in for setup_method is not one
