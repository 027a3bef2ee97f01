"""What a project's tests hold: ``Threadmill`` (the ``threadmill`` pytest fixture's value) and
``ThreadmillTestMixin`` for Django's TestCase."""

import unittest
from contextlib import ExitStack

from ..compat import TaskResult
from .drain import drain
from .fixture_rows import enqueued_by_fixture_rows
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
    ``setUp`` of your own calls ``super().setUp()`` before it enqueues anything. The flush
    comes before Django sets the test up, so what the fixtures a TransactionTestCase loads for
    each test and the classes listed after the mixin enqueue is the test's.
    In a parallel run each process gets keys of its own (testing/isolation.py).
    """

    # The tasks stored while the class sets up, and the noting of them, until its first test.
    _stored_for_the_class: list[TaskResult]
    _models_of_the_class: dict[str, str]  # of those, the fixture rows' models, by task id
    _noting_for_the_class: ExitStack
    # The running test's own key prefixes and flushes; None between tests.
    _around_the_test: ExitStack | None = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.enterClassContext(own_key_prefixes())
        # From here to its first test the class sets up (setUpTestData, the rest of a
        # setUpClass of its own): that test's flush deletes what it enqueued, and says so.
        cls._noting_for_the_class = ExitStack()
        cls.addClassCleanup(cls._noting_for_the_class.close)
        cls.addClassCleanup(cls._end_the_test)  # a setUpClass that raised after the first's
        cls._stored_for_the_class = cls._noting_for_the_class.enter_context(tasks_stored())
        noting = cls._noting_for_the_class.enter_context(enqueued_by_fixture_rows())
        cls._models_of_the_class = noting
        super().setUpClass()

    @classmethod
    def _pre_setup(cls) -> None:
        """Begin the test before Django sets it up: a TransactionTestCase loads its fixtures
        here for each test (the first's in its setUpClass), and what their saves enqueue is
        the test's."""
        try:
            cls._begin_the_test()
            super()._pre_setup()  # type: ignore[misc]
        except BaseException:
            cls._end_the_test()
            raise

    def setUp(self) -> None:
        # Begun in _pre_setup, unless the class lists Django's TestCase before the mixin:
        # its _pre_setup does not reach the mixin's.
        self.addCleanup(self._end_the_test)
        if self._around_the_test is None:
            self._begin_the_test()
        super().setUp()

    def _post_teardown(self) -> None:
        """End the test begun in ``_pre_setup``: a ``setUp`` of the project's that raised
        before ``super().setUp()`` left it open."""
        self._end_the_test()
        super()._post_teardown()  # type: ignore[misc]

    @classmethod
    def _begin_the_test(cls) -> None:
        """Give the test this process's key prefixes (a class's @override_settings(TASKS=...),
        entered by Django's setUpClass after the mixin's, replaced those suffixed there) and
        flush before it; name what the class set up enqueued, which that flush deleted."""
        cls._around_the_test = ExitStack()
        cls._around_the_test.enter_context(own_key_prefixes())
        cls._around_the_test.enter_context(flushed_around())
        cls._noting_for_the_class.close()  # a no-op after the class's first test
        say_flushed_before_the_class(cls._stored_for_the_class, cls, cls._models_of_the_class)
        cls._stored_for_the_class.clear()

    @classmethod
    def _end_the_test(cls) -> None:
        """Flush after the test and give back its prefixes; a no-op once done."""
        around, cls._around_the_test = cls._around_the_test, None
        if around is not None:
            around.close()
