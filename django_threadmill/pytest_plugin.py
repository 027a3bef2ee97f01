"""The ``threadmill`` pytest fixture, registered by the package's ``pytest11`` entry point.

pytest loads this module in every session of every project that has django-threadmill
installed, before Django's settings are read: it imports nothing of the package until a test
asks for the fixture.
"""

from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest.fixtures import FixtureDef  # pytest.FixtureDef is pytest 8.1's

    from .compat import TaskResult
    from .testing import Threadmill

# The tasks stored while a test that asks for the fixture is set up, noted from the start, and
# the fixture whose setup stored each (by task id).
_STORED_IN_SETUP = pytest.StashKey[list["TaskResult"]]()
_FIXTURE_OF = pytest.StashKey[dict[str, str]]()
# The noting of the test being set up, while it is: (its stored tasks, the fixture of each).
_noting: tuple[list["TaskResult"], dict[str, str]] | None = None


# An old-style wrapper (hookwrapper): pluggy before 1.1 (pytest 7.3 and older take 1.0) knows no
# other, and refused this module, stopping every session of a project that installs the package.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Note the tasks stored while a test that asks for ``threadmill`` is set up: those its
    fixtures enqueue before the fixture is set up are lost to the test, and the fixture says
    so (testing/not_run.py). A setup that raises ends the noting as one that passed."""
    if "threadmill" not in getattr(item, "fixturenames", ()):
        yield
        return
    from .testing.not_run import tasks_stored

    global _noting
    with tasks_stored() as stored:
        item.stash[_STORED_IN_SETUP] = stored
        item.stash[_FIXTURE_OF] = {}
        _noting = stored, item.stash[_FIXTURE_OF]
        try:
            yield
        finally:
            _noting = None


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: "FixtureDef[Any]") -> Iterator[None]:
    """Note which fixture stored each task while a test that asks for ``threadmill`` is set up:
    the warning about those its flush deletes names the fixtures to change. A fixture set up
    inside another's (``request.getfixturevalue``) ends first and keeps its own. pytest's
    stand-ins for a ``setup_method`` or ``setup_function`` are not named: the warning speaks
    of those already."""
    noting = _noting
    if noting is None or fixturedef.argname.startswith("_xunit_setup_"):
        yield
        return
    stored, fixture_of = noting
    before = len(stored)
    try:
        yield
    finally:
        for result in stored[before:]:
            fixture_of.setdefault(result.id, fixturedef.argname)


@pytest.fixture
def threadmill(request: pytest.FixtureRequest) -> Iterator["Threadmill"]:
    """Run the test's tasks with ``threadmill.drain()``, in its own thread; the project's Redis
    keys (every ThreadmillTaskBackend's key_prefix) are flushed before and after it, and those
    of a ``TASKS`` the test set itself after it. Under pytest-xdist each worker gets keys of
    its own (testing/isolation.py). Tasks the test's fixtures enqueued before it are not run,
    and a warning says so."""
    from .testing import Threadmill
    from .testing.flushing import flushed_around
    from .testing.not_run import say_flushed_first

    stored_first = list(request.node.stash.get(_STORED_IN_SETUP, []))
    fixture_of = dict(request.node.stash.get(_FIXTURE_OF, {}))
    with _own_key_prefixes(request), flushed_around():
        say_flushed_first(stored_first, fixture_of)
        yield Threadmill()


def _own_key_prefixes(request: pytest.FixtureRequest) -> AbstractContextManager[Any]:
    """Give this test process's key prefixes to the test, through pytest-django's ``settings``
    fixture when there is one: it undoes its changes last and in reverse order, so an override
    of ours, undone first, would come back with its undoing of a change the test made through
    it (``settings.DEBUG = True``), and hold for every later test (docs/testing.md, Keys are
    flushed around each test)."""
    from django.test import override_settings

    from .testing.isolation import suffixed_tasks

    tasks = suffixed_tasks()
    if tasks is None:
        return nullcontext()
    try:
        settings = request.getfixturevalue("settings")
    except pytest.FixtureLookupError:  # no pytest-django
        return override_settings(TASKS=tasks)
    settings.TASKS = tasks
    return nullcontext()
