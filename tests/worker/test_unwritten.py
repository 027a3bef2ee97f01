"""What a write did not record waits for its next try (worker/unwritten.py), on an injected
clock: the others go at once unless the try wrote nothing on one Redis."""

from django_threadmill.broker import Finish, Lease, Outcome, Start
from django_threadmill.worker.backoff import ACK_BACKOFF
from django_threadmill.worker.unwritten import Unwritten


def lease(n: int) -> Lease:
    return Lease(task_id=f"t{n}@default", queue="default", token=f"k{n}")


def start(n: int) -> Start:
    return Start(lease=lease(n), started_ms=1)


def finish(n: int) -> Finish:
    return Finish(
        lease=lease(n), outcome=Outcome.SUCCESSFUL, value="1", started_ms=1, finished_ms=2
    )


def test_kept_items_wait_their_backoff_and_a_partial_failure_holds_up_nothing() -> None:
    unwritten = Unwritten()
    retry_in_s = unwritten.kept([start(1)], [finish(2)], 100.0, holds_up=False)

    assert retry_in_s == ACK_BACKOFF.after(1)
    assert len(unwritten) == 2
    assert not unwritten.holds_up(100.0)  # a cluster's other nodes answered: the rest goes on
    assert unwritten.take(100.0) == ([], [])  # not due yet
    assert unwritten.take(100.0 + retry_in_s) == ([start(1)], [finish(2)])
    assert len(unwritten) == 0


def test_a_try_that_wrote_nothing_on_one_redis_holds_up_what_comes_until_it_is_due() -> None:
    unwritten = Unwritten()
    unwritten.kept([], [finish(1)], 100.0, holds_up=True)
    assert unwritten.holds_up(100.0)
    unwritten.add([], [finish(2)])  # came meanwhile: waits for the same try

    due = 100.0 + ACK_BACKOFF.after(1)
    assert not unwritten.holds_up(due)
    assert unwritten.take(due) == ([], [finish(1), finish(2)])


def test_failures_in_a_row_back_off_longer_and_a_clean_try_starts_over() -> None:
    unwritten = Unwritten()
    unwritten.kept([], [finish(1)], 0.0, holds_up=True)
    unwritten.take(10.0)
    assert unwritten.kept([], [finish(1)], 10.0, holds_up=True) == ACK_BACKOFF.after(2)

    unwritten.take(20.0)
    assert unwritten.kept([], [], 20.0, holds_up=False) == 0.0
    assert unwritten.failures == 0
    assert not unwritten.holds_up(20.0)


def test_a_clean_try_beside_items_still_waiting_keeps_their_backoff() -> None:
    unwritten = Unwritten()
    unwritten.kept([], [finish(1)], 0.0, holds_up=False)
    unwritten.kept([], [], 0.01, holds_up=False)  # other queues' items, written
    assert unwritten.failures == 1
    assert unwritten.take(0.01) == ([], [])


def test_a_kept_start_notice_is_dropped_once_its_outcome_comes() -> None:
    unwritten = Unwritten()
    unwritten.kept([start(1), start(2)], [], 0.0, holds_up=False)

    assert unwritten.drop_starts([lease(2), lease(3)]) == 1
    assert unwritten.take(1.0) == ([start(1)], [])


def test_every_item_is_taken_at_once_when_the_writer_gives_up() -> None:
    unwritten = Unwritten()
    unwritten.kept([], [finish(1)], 0.0, holds_up=True)
    assert unwritten.take(0.0, every=True) == ([], [finish(1)])
