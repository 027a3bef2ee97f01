"""A reaping loop's hold: after a pass Redis did not answer, or a stall of the loop itself, no
lease is settled until live workers had a renewal interval and a slack to renew theirs; on a
clock the test moves (worker/reap_hold.py). The commands' loops under a real stall and a real
outage: tests/lifecycle/test_reaper_holds_after_an_outage_or_a_stall.py."""

import logging

import pytest

from django_threadmill.worker.reap_hold import RENEWAL_SLACK_S, ReapHold

INTERVAL_S = 10.0
LEASE_TTL_S = 60.0  # a renewal interval of 20 s
HOLD_S = LEASE_TTL_S / 3 + RENEWAL_SLACK_S


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def hold(clock: Clock) -> ReapHold:
    return ReapHold(INTERVAL_S, LEASE_TTL_S, clock=clock)


def pass_at(hold: ReapHold, clock: Clock, at: float, *, answered: bool = True) -> bool:
    """Run a pass starting at ``at`` and ending at once; return whether it settled leases."""
    clock.now = at
    settles = hold.settles()
    hold.ended(answered=answered)
    return settles


def held_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "Expired leases held" in r.getMessage()]


def test_passes_on_time_that_redis_answers_settle_leases(hold: ReapHold, clock: Clock) -> None:
    # The first pass saw no outage, and a pass a renewal interval late is still no stall.
    starts = [1000.0, 1010.0, 1020.0, 1050.0]
    assert [pass_at(hold, clock, at) for at in starts] == [True, True, True, True]


def test_after_a_pass_redis_did_not_answer_leases_wait_a_renewal_interval(
    hold: ReapHold, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="django_threadmill")
    assert pass_at(hold, clock, 1000.0)
    assert pass_at(hold, clock, 1010.0, answered=False)
    assert not pass_at(hold, clock, 1020.0)  # the hold starts here, as Redis answers again
    assert not pass_at(hold, clock, 1020.0 + HOLD_S - 0.1)
    assert pass_at(hold, clock, 1020.0 + HOLD_S)
    assert held_lines(caplog) == [
        f"Expired leases held for {HOLD_S:g}s: Redis did not answer the last reap pass; live "
        "workers renew theirs meanwhile, and those still expired then are settled "
        "(docs/lifecycle.md, After an outage or a stall)"
    ]


def test_an_outage_over_several_passes_holds_from_the_pass_after_the_last_failed_one(
    hold: ReapHold, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="django_threadmill")
    assert pass_at(hold, clock, 1000.0)
    for at in (1010.0, 1020.0, 1030.0, 1040.0):  # Redis away for 40 s: each pass fails
        pass_at(hold, clock, at, answered=False)
    assert not pass_at(hold, clock, 1050.0)
    assert not pass_at(hold, clock, 1050.0 + HOLD_S - 0.1)
    assert pass_at(hold, clock, 1050.0 + HOLD_S)
    assert len(held_lines(caplog)) == 1  # one line for the whole outage


def test_a_stall_past_a_renewal_interval_holds_leases(
    hold: ReapHold, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="django_threadmill")
    assert pass_at(hold, clock, 1000.0)
    stalled_to = 1000.0 + INTERVAL_S + LEASE_TTL_S / 3 + 0.5  # due at 1010, 20.5 s late
    assert not pass_at(hold, clock, stalled_to)
    assert pass_at(hold, clock, stalled_to + HOLD_S)
    assert held_lines(caplog) == [
        f"Expired leases held for {HOLD_S:g}s: this reaper was stalled 20.5s past its "
        "interval; live workers renew theirs meanwhile, and those still expired then are "
        "settled (docs/lifecycle.md, After an outage or a stall)"
    ]


def test_a_long_pass_is_no_stall(hold: ReapHold, clock: Clock) -> None:
    # A backlog can take a pass minutes; lateness counts from its end.
    clock.now = 1000.0
    assert hold.settles()
    clock.now = 1300.0
    hold.ended(answered=True)
    assert pass_at(hold, clock, 1310.0)
