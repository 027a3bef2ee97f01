"""What a project's tests hold: ``flush`` for a clean Redis, ``Threadmill`` (the ``threadmill``
pytest fixture's value) and ``ThreadmillTestMixin`` for Django's TestCase."""

import unittest

from ..aliases import threadmill_aliases, threadmill_backend
from ..enqueue.pipeline import pipelines_sharing
from .drain import drain
from .isolation import own_key_prefixes


def flush() -> None:
    """Delete every key of every ThreadmillTaskBackend in TASKS: all under its key_prefix.

    Meant for the Redis a test run uses; a Redis shared with anything else needs a key_prefix
    of the tests' own.
    """
    for alias in threadmill_aliases():
        backend = threadmill_backend(alias)
        backend.broker.flush()
        # A test's override of TASKS with other options made pipelines for these keys too.
        for pipeline in pipelines_sharing(backend.settings):
            pipeline.broker.forget()


class Threadmill:
    """Run a test's tasks (``drain``) and start again from an empty Redis (``flush``)."""

    drain = staticmethod(drain)
    flush = staticmethod(flush)


class ThreadmillTestMixin(Threadmill, unittest.TestCase):
    """``self.drain(...)`` in a Django ``TestCase``, with the project's Redis keys flushed
    before and after each test.

    List it before the TestCase class (``class T(ThreadmillTestMixin, TestCase)``); a
    ``setUp`` of your own calls ``super().setUp()`` before it enqueues anything. In a parallel
    run each process gets keys of its own (testing/isolation.py).
    """

    @classmethod
    def setUpClass(cls) -> None:
        cls.enterClassContext(own_key_prefixes())
        super().setUpClass()

    def setUp(self) -> None:
        super().setUp()
        # Again for the test: a class's @override_settings(TASKS=...), entered by the
        # TestCase's setUpClass after the mixin's, replaced the prefixes suffixed there.
        self.enterContext(own_key_prefixes())
        flush()
        self.addCleanup(flush)
