"""The ``threadmill`` pytest fixture, registered by the package's ``pytest11`` entry point.

pytest loads this module in every session of every project that has django-threadmill
installed, before Django's settings are read: it imports nothing of the package until a test
asks for the fixture.
"""

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing import Threadmill


@pytest.fixture
def threadmill() -> Iterator["Threadmill"]:
    """Run the test's tasks with ``threadmill.drain()``, in its own thread; the project's Redis
    keys (every ThreadmillTaskBackend's key_prefix) are flushed before and after it, and those
    of a ``TASKS`` the test set itself after it. Under pytest-xdist each worker gets keys of
    its own (testing/isolation.py)."""
    from .testing import Threadmill
    from .testing.flushing import flushed_around
    from .testing.isolation import own_key_prefixes

    with own_key_prefixes(), flushed_around():
        yield Threadmill()
