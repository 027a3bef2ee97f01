"""Regression: a retry re-acquired by the same process before its failed attempt's ack was
written was dropped from the held leases, skipped as "lost", and waited for the reaper."""

from django_threadmill.broker import Lease
from django_threadmill.worker.leases import HeldLeases


def test_writing_the_old_attempts_ack_keeps_the_new_lease_held() -> None:
    held = HeldLeases()
    old = Lease(task_id="t@default", queue="default", token="1")
    new = Lease(task_id="t@default", queue="default", token="2")
    held.add([old])
    held.add([new])  # the retry, re-acquired with a bumped token
    held.discard([old])  # the ack writer forgets the attempt it just wrote
    assert held.holds(new)
    assert not held.holds(old)
    assert held.snapshot() == [new]
    held.discard([new])
    assert not held.holds(new)
