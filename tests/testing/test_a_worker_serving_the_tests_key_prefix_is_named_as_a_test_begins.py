"""A worker process serving the key prefix the tests use is named, with the fix, as a test that
flushes Redis (the ``threadmill`` fixture, ``ThreadmillTestMixin``) begins.

A developer's ``threadmill_worker``, left running on the development settings, took the tasks a
test enqueued: ``drain()`` returned 0 without a word (or 1 when it won the race), the task ran on
the development database, and each test's flush deleted the worker's queues.
"""

import logging
import re

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect.inspector import Inspector
from django_threadmill.codec.ids import make_worker_id
from django_threadmill.testing import drain
from django_threadmill.testing.flushing import flushed_around
from tests.support import running, wait_until, worker

from . import tasks
from .said import LOGGER, warnings_of


def test_a_worker_on_the_tests_prefix_is_named_with_the_fix(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with running(worker(redis_url, key_prefix)) as command:
        worker_id = re.escape(command.wait_for_log(r"worker_id=(\S+)")[1])
        inspector = Inspector(backend.broker)
        wait_until(lambda: inspector.workers(["default"], counts=False), "the worker's renewal")
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            for _ in range(2):  # the next test's too, though the flush deleted the sighting
                with flushed_around():
                    pass
    said, again = warnings_of(caplog)
    assert again == said
    assert re.fullmatch(
        rf"A worker process serves the queues of TASKS\['default'\] \(key_prefix "
        rf"'{key_prefix}' at {re.escape(redis_url)}\) that this test's flush empties: "
        rf"{worker_id} renewed its leases there within lease_ttl\. Such a worker \(a "
        r"threadmill_worker left running on the development settings\) takes the test's "
        r"tasks, so drain\(\) does not run them, runs them on its own database, and loses its "
        r"queues to the flush\. Give the tests a key_prefix of their own \(OPTIONS\['key_prefix'\] "
        r"in the test settings\) or a Redis of their own, or stop that worker\.",
        said,
    ), said


def test_a_drain_of_the_tests_own_process_is_not_named(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    tasks.record.enqueue("drained here")
    assert drain() == 1
    # A drain that runs past a renewal interval renews under an id of this process.
    backend.broker.renew(make_worker_id(), [], ["default"])
    assert Inspector(backend.broker).workers(["default"], counts=False)
    with caplog.at_level(logging.WARNING, logger=LOGGER), flushed_around():
        pass
    assert warnings_of(caplog) == []
