"""The buffer hands tasks to threads in order, wakes the prefetcher per refill, and closes."""

import threading

from django_threadmill.broker import Lease, Reservation
from django_threadmill.worker.buffer import TaskBuffer, Turn
from tests.support import wait_until


def reservations(count: int) -> list[Reservation]:
    return [
        Reservation(
            lease=Lease(task_id=f"t{n}@default", queue="default", token="1"),
            payload="{}",
            workers=[],
            enqueued_ms=None,
            started_ms=None,
            errors=[],
        )
        for n in range(count)
    ]


def test_tasks_come_out_in_order_and_idle_means_nothing_waits_or_runs() -> None:
    buffer = TaskBuffer(8, lambda reservation: False)
    buffer.put_many(reservations(3))
    taken = [buffer.take() for _ in range(3)]
    assert [r.lease.task_id for r in taken if isinstance(r, Reservation)] == [
        "t0@default",
        "t1@default",
        "t2@default",
    ]
    assert not buffer.is_idle()  # taken, not done
    for _ in taken:
        buffer.done()
    assert buffer.is_idle()


def test_the_prefetcher_waits_until_half_the_buffer_is_free() -> None:
    buffer = TaskBuffer(8, lambda reservation: False)
    buffer.put_many(reservations(8))
    stop = threading.Event()
    room: list[int] = []
    waiter = threading.Thread(target=lambda: room.append(buffer.free_slots(stop)))
    waiter.start()
    for _ in range(3):
        buffer.take()
    assert room == []  # 3 free of 8: below the refill mark of 4
    buffer.take()
    wait_until(lambda: room, "the prefetcher woke at the refill mark")
    waiter.join()
    assert room == [4]
    assert buffer.free_slots(stop) == 4  # room already there: no wait


def test_close_returns_unstarted_tasks_and_releases_every_taker() -> None:
    buffer = TaskBuffer(8, lambda reservation: False)
    buffer.put_many(reservations(2))
    first = buffer.take()
    ends: list[object] = []
    takers = [threading.Thread(target=lambda: ends.append(buffer.take())) for _ in range(3)]
    for taker in takers[:1]:
        taker.start()
    wait_until(lambda: ends, "the second task was taken")
    for taker in takers[1:]:
        taker.start()
    unstarted = buffer.close()
    for taker in takers:
        taker.join(5)
    assert first is not None
    assert unstarted == []
    assert ends[1:] == [Turn.CLOSED, Turn.CLOSED]
    assert buffer.take() is Turn.CLOSED
    buffer.done()
    buffer.done()
    assert buffer.is_idle()


def test_close_hands_back_what_no_thread_took() -> None:
    buffer = TaskBuffer(8, lambda reservation: False)
    buffer.put_many(reservations(3))
    buffer.take()
    unstarted = buffer.close()
    assert [r.lease.task_id for r in unstarted] == ["t1@default", "t2@default"]
    buffer.done()
    assert buffer.is_idle()
    assert buffer.free_slots(threading.Event()) == 0  # closed: the prefetcher stops


def test_tasks_put_after_the_close_are_never_taken_and_come_back_at_the_next_close() -> None:
    """They once landed behind the CLOSED turn, where each thread passing it on took the next:
    a process recycled at --max-tasks ran on past it."""
    buffer = TaskBuffer(8, lambda reservation: False)
    assert buffer.close() == []
    buffer.put_many(reservations(2))  # the prefetcher, not stopped yet
    assert buffer.take() is Turn.CLOSED
    assert buffer.take() is Turn.CLOSED
    assert [r.lease.task_id for r in buffer.close()] == ["t0@default", "t1@default"]
    assert buffer.is_idle()


def test_async_tasks_go_to_the_event_loop_and_count_as_waiting() -> None:
    buffer = TaskBuffer(8, lambda reservation: reservation.lease.task_id.startswith("t1"))
    nudged: list[bool] = []
    buffer.on_async_work = lambda: nudged.append(True)
    buffer.put_many(reservations(3))
    assert nudged == [True]  # once per put, not per task
    assert buffer.saw_async
    assert buffer.waiting() == 3
    assert [r.lease.task_id for r in buffer.take_async(5)] == ["t1@default"]
    assert [buffer.take(), buffer.take()] == [reservations(3)[0], reservations(3)[2]]


def test_a_retire_marker_ends_one_taker() -> None:
    buffer = TaskBuffer(8, lambda reservation: False)
    buffer.retire_one()
    buffer.put_many(reservations(1))
    assert buffer.take() is Turn.RETIRE
    assert isinstance(buffer.take(), Reservation)
