"""A role thread whose own loop fails logs CRITICAL and stops its process."""

import logging
import threading

import pytest

from django_threadmill.worker.role import RoleThread


class Broken(RoleThread):
    def loop(self) -> None:
        raise RuntimeError("the loop itself is broken")


def test_a_failing_loop_is_logged_by_name_and_stops_the_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crashed = threading.Event()
    thread = Broken("threadmill-broken", crashed.set)
    with caplog.at_level(logging.CRITICAL, logger="django_threadmill"):
        thread.start()
        thread.join(5)
    assert crashed.is_set()
    [record] = caplog.records
    assert record.getMessage() == "Thread died name=threadmill-broken"
    assert record.exc_info is not None
    assert "the loop itself is broken" in str(record.exc_info[1])
