"""Test a project's tasks against the real Redis, in the test's own thread (docs/testing.md).

``drain()`` runs the queued tasks here until the queues are empty; the ``threadmill`` pytest
fixture (django_threadmill.pytest_plugin, registered on install) and ``ThreadmillTestMixin``
give it to tests, with the project's keys flushed around each one (testing/flushing.py).
"""

from .drain import drain
from .flushing import flush
from .helpers import Threadmill, ThreadmillTestMixin

__all__ = ["Threadmill", "ThreadmillTestMixin", "drain", "flush"]
