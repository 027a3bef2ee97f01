"""HeldBackQueues: the prefetcher skips a limited queue until its token or a wake, not longer."""

from django_threadmill.worker.held_back import HeldBackQueues, Hold
from tests.support import wait_until


def test_a_rate_hold_lasts_until_its_token_and_bounds_the_idle_wait() -> None:
    held = HeldBackQueues()
    held.hold("emails", 50, Hold.START)
    assert held.is_held("emails")
    assert not held.is_held("default")
    due = held.next_due_ms(Hold.START)
    assert due is not None
    assert 0 <= due <= 50
    wait_until(lambda: not held.is_held("emails"), "the token's time came", 5)
    assert held.next_due_ms(Hold.START) is None


def test_a_full_concurrency_hold_does_not_shorten_the_idle_wait() -> None:
    held = HeldBackQueues()
    held.hold("reports", None, Hold.SLOT)
    assert held.is_held("reports")
    # An idle prefetcher waits for the finish's wake token: no hold it waits for is due.
    assert held.next_due_ms(Hold.START) is held.next_due_ms(Hold.RECHECK) is None
    wait_until(lambda: not held.is_held("reports"), "a busy prefetcher looks again", 5)


def test_a_wake_clears_every_hold() -> None:
    held = HeldBackQueues()
    held.hold("reports", None, Hold.SLOT)
    held.hold("emails", 10_000, Hold.START)
    held.clear()
    assert not held.is_held("reports")
    assert not held.is_held("emails")
