"""Calls only the stop makes run in threads of their own, waited for until a deadline."""

import threading
import time

import pytest

from django_threadmill.worker.stop_calls import StopCall, join_until, start_call


def test_a_stop_call_runs_in_a_thread_named_for_its_role_and_keeps_its_result() -> None:
    seen: list[str] = []

    def call() -> bool:
        seen.append(threading.current_thread().name)
        return True

    releasing = start_call("release", call, on_crash=lambda: None)
    join_until(releasing, time.monotonic() + 10)
    assert seen == ["threadmill-stop-release"]
    assert releasing.result is True


def test_a_call_that_does_not_return_holds_the_join_only_until_its_deadline() -> None:
    """As a call to a Redis that never answers: the stop goes on without it."""
    answer = threading.Event()
    waking = start_call("wake", answer.wait, on_crash=lambda: None)
    try:
        join_until(waking, time.monotonic() + 0.05)
        assert waking.is_alive()
        assert waking.result is None
    finally:
        answer.set()
        waking.join()
    assert waking.result is True


def test_a_call_the_system_refuses_a_thread_for_is_made_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(self: StopCall[bool]) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(StopCall, "start", refused)
    releasing = start_call("release", lambda: True, on_crash=lambda: None)
    join_until(releasing, time.monotonic() + 10)  # never started: nothing to join
    assert releasing.result is True
