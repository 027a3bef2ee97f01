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
    from .testing import Threadmill


@pytest.fixture
def threadmill(request: pytest.FixtureRequest) -> Iterator["Threadmill"]:
    """Run the test's tasks with ``threadmill.drain()``, in its own thread; the project's Redis
    keys (every ThreadmillTaskBackend's key_prefix) are flushed before and after it, and those
    of a ``TASKS`` the test set itself after it. Under pytest-xdist each worker gets keys of
    its own (testing/isolation.py)."""
    from .testing import Threadmill
    from .testing.flushing import flushed_around

    with _own_key_prefixes(request), flushed_around():
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
