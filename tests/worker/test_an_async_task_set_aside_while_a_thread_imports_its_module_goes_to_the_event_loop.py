"""An async task set aside while a worker thread imports its module goes to the event loop once
the import returns, not to the worker threads, as an ``async def`` task "waits for no worker
thread, even behind sync tasks that hold them all" (docs/worker.md, Two lanes).

Two runners that take tasks of one module not imported yet import it once: the second sets its
task aside for the first to hand on. The loop took an ``async def`` task of a module whose sync
task a thread was importing; handed on, its path, never looked up itself, had no known lane, and
it went to the threads to be sorted: it waited for a free thread (for good where the sync tasks
of that module wait for what the async one does).

The buffer alone, with a stand-in for the import that waits until the test lets it return.
"""

import threading

from django_threadmill.broker import Lease, Reservation
from django_threadmill.worker.buffer import TaskBuffer, Unsorted, reservation_of

WAIT_S = 60.0  # a bound on each wait, never reached when the test passes
SYNC_PATH = "shop.tasks.send_receipt"
ASYNC_PATH = "shop.tasks.notify_warehouse"


class SlowImport:
    """The lanes of the module ``shop.tasks``, known per path once asked, as worker/lanes.py
    keeps them; its import waits until ``release`` is set."""

    def __init__(self) -> None:
        self.lanes: dict[str, bool] = {}
        self.importing = threading.Event()
        self.release = threading.Event()

    def is_async(self, reservation: Reservation) -> bool:
        path = reservation.lease.task_path
        if not self.lanes:
            self.importing.set()
            assert self.release.wait(WAIT_S), "the test never let the import return"
        self.lanes[path] = path == ASYNC_PATH
        return self.lanes[path]

    def known_lane(self, reservation: Reservation) -> bool | None:
        return self.lanes.get(reservation.lease.task_path)


def reservation(path: str) -> Reservation:
    return Reservation(
        lease=Lease(task_id=f"{path}@default", queue="default", token="1", task_path=path),
        payload="{}",
        workers=[],
        enqueued_ms=None,
        started_ms=None,
        errors=[],
    )


def test_an_async_task_set_aside_for_a_threads_import_is_handed_to_the_event_loop() -> None:
    module = SlowImport()
    buffer = TaskBuffer(
        8,
        module.is_async,
        module.known_lane,
        sorted_on_loop=lambda taken: taken.lease.task_path == ASYNC_PATH,  # its payload's mark
    )
    buffer.put_many([reservation(SYNC_PATH), reservation(ASYNC_PATH)])
    by_the_thread = buffer.take()
    [by_the_loop] = buffer.take_async(1)
    assert isinstance(by_the_thread, Unsorted)
    assert isinstance(by_the_loop, Unsorted)

    sorted_by_the_thread: list[Reservation | None] = []
    importing = threading.Thread(
        target=lambda: sorted_by_the_thread.append(buffer.sort(by_the_thread))
    )
    importing.start()
    assert module.importing.wait(WAIT_S)
    assert buffer.sort(by_the_loop) is None  # set aside while the thread imports
    module.release.set()
    importing.join(WAIT_S)

    assert sorted_by_the_thread == [by_the_thread.reservation]
    assert buffer.sync_waiting() == 0  # nothing waits for a thread
    assert [reservation_of(item).lease.task_path for item in buffer.take_async(1)] == [ASYNC_PATH]
