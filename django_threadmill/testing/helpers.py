"""What a project's tests hold: ``Threadmill`` (the ``threadmill`` pytest fixture's value) and
``ThreadmillTestMixin`` for Django's TestCase."""

import unittest
from contextlib import ExitStack

from ..compat import TaskResult
from .drain import drain
from .flushing import flush, flushed_around
from .isolation import own_key_prefixes
from .not_run import say_flushed_before_the_class, tasks_stored


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

    # The tasks stored while the class sets up, and the noting of them, until its first test.
    _stored_for_the_class: list[TaskResult]
    _noting_for_the_class: ExitStack

    @classmethod
    def setUpClass(cls) -> None:
        cls.enterClassContext(own_key_prefixes())
        # From here to its first test the class sets up (setUpTestData, the rest of a
        # setUpClass of its own): that test's flush deletes what it enqueued, and says so.
        cls._noting_for_the_class = ExitStack()
        cls.addClassCleanup(cls._noting_for_the_class.close)
        cls._stored_for_the_class = cls._noting_for_the_class.enter_context(tasks_stored())
        super().setUpClass()

    def setUp(self) -> None:
        # Again for the test: a class's @override_settings(TASKS=...), entered by the
        # TestCase's setUpClass after the mixin's, replaced the prefixes suffixed there.
        self.enterContext(own_key_prefixes())
        # Before the classes after the mixin set up: a project's base TestCase whose setUp
        # enqueues (a user saved, a signal sending the welcome email) enqueues for the test.
        self.enterContext(flushed_around())
        self._noting_for_the_class.close()  # a no-op after the class's first test
        say_flushed_before_the_class(self._stored_for_the_class, type(self))
        self._stored_for_the_class.clear()
        super().setUp()
