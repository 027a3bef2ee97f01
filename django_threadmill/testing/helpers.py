"""What a project's tests hold: ``Threadmill`` (the ``threadmill`` pytest fixture's value) and
``ThreadmillTestMixin`` for Django's TestCase."""

import unittest

from .drain import drain
from .flushing import flush, flushed_around
from .isolation import own_key_prefixes


class Threadmill:
    """Run a test's tasks (``drain``) and start again from an empty Redis (``flush``)."""

    drain = staticmethod(drain)
    flush = staticmethod(flush)


class ThreadmillTestMixin(Threadmill, unittest.TestCase):
    """``self.drain(...)`` in a Django ``TestCase``, with the project's Redis keys flushed
    before and after each test, and those of a ``TASKS`` the test set itself after it.

    List it before the TestCase class (``class T(ThreadmillTestMixin, TestCase)``); a
    ``setUp`` of your own calls ``super().setUp()`` before it enqueues anything, and the
    classes listed after the mixin set up after its flush, so what they enqueue is the test's.
    In a parallel run each process gets keys of its own (testing/isolation.py).
    """

    @classmethod
    def setUpClass(cls) -> None:
        cls.enterClassContext(own_key_prefixes())
        super().setUpClass()

    def setUp(self) -> None:
        # Again for the test: a class's @override_settings(TASKS=...), entered by the
        # TestCase's setUpClass after the mixin's, replaced the prefixes suffixed there.
        self.enterContext(own_key_prefixes())
        # Before the classes after the mixin set up: a project's base TestCase whose setUp
        # enqueues (a user saved, a signal sending the welcome email) enqueues for the test.
        self.enterContext(flushed_around())
        super().setUp()
