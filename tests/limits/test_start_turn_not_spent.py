"""A rate-limited queue's start turn is taken only for a task that then starts: a task whose
lease was lost, or whose workflow stopped it, while it waited for its turn leaves the turn to
the next task; a stop ends the wait at once and hands the task back (docs/schedules.md,
Per-queue limits). The worker's parts run in the test's own thread, on real Redis."""

import threading
from collections.abc import Callable, Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Reservation
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.cancelled_steps import CancelledSteps
from django_threadmill.worker.executor import Executor
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.pacing import Pacer
from django_threadmill.worker.runner import RunnerParts
from django_threadmill.worker.threads import WorkerThread

from .tasks import stamp

A_MINUTE_MS = 60_000  # "1/m": the queue's interval between two starts


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": {"emails": {"rate": "1/m"}}}


class TurnBroker(Broker):
    """The real broker; ``meanwhile`` runs once while a task waits for its start turn, and the
    wait then ends at once, as if its interval had passed (a clock moved by hand)."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.meanwhile: Callable[[], None] | None = None
        self.waiting = threading.Event()  # set once a task was told to wait for its turn

    def start_turn(self, queue: str) -> float:
        wait_ms = super().start_turn(queue)
        if wait_ms and self.meanwhile is not None:
            self.meanwhile()
            self.meanwhile = None
            return 1  # the interval passed: the pacer asks again (in 1 ms)
        if wait_ms:
            self.waiting.set()
        return wait_ms


class Runner:
    """A worker thread's parts around one reserved task of "emails", not started."""

    def __init__(self, broker: TurnBroker, backend: ThreadmillTaskBackend) -> None:
        self.released: list[Reservation] = []
        self.held = HeldLeases()
        executor = Executor("worker-a", backend.alias, type(backend))
        self.writer = AckWriter(
            broker, "worker-a", self.held, executor.progress, lambda: None, _fail
        )
        self.buffer = TaskBuffer(capacity=4, is_async=lambda reservation: False)
        self.pacer = Pacer(broker, self.released.extend, self.buffer.put_many)
        parts = RunnerParts(
            buffer=self.buffer,
            executor=executor,
            writer=self.writer,
            held=self.held,
            pacer=self.pacer,
            cancelled_steps=CancelledSteps(broker),
            sync_ack=False,
            on_task_done=lambda: None,
        )
        self.thread = WorkerThread(0, parts, _fail)
        stamp.enqueue("unused.log")
        (self.reservation,) = broker.acquire("emails", 1).reservations
        self.held.add([self.reservation.lease])


def _fail() -> None:
    raise AssertionError("a worker part crashed")


@pytest.fixture
def broker(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> Iterator[TurnBroker]:
    turns = TurnBroker(backend.broker)
    seconds, micros = redis_client.time()
    # Another start just took the queue's turn: the next comes a minute on.
    paced = turns.queue_keys("emails").paced
    redis_client.set(paced, seconds * 1000 + micros // 1000 + A_MINUTE_MS)
    yield turns
    turns.client.close()


@pytest.fixture
def runner(broker: TurnBroker, backend: ThreadmillTaskBackend) -> Runner:
    return Runner(broker, backend)


def the_interval_passes(broker: Broker, redis_client: redis.Redis) -> None:
    redis_client.delete(broker.queue_keys("emails").paced)


def test_a_task_whose_lease_was_lost_while_it_waited_leaves_the_turn_to_the_next(
    broker: TurnBroker, runner: Runner, redis_client: redis.Redis
) -> None:
    def lease_lost() -> None:  # as the lease keeper finds it (reaped, settled elsewhere)
        runner.held.forget_lost([runner.reservation.lease])
        the_interval_passes(broker, redis_client)

    broker.meanwhile = lease_lost
    assert runner.thread.admit(runner.reservation) is False
    assert broker.start_turn("emails") == 0  # the turn is still there for the next task
    assert runner.released == []  # not ours to hand back


def test_a_step_its_workflow_stopped_while_it_waited_leaves_the_turn_to_the_next(
    broker: TurnBroker, runner: Runner, redis_client: redis.Redis
) -> None:
    step = runner.reservation._replace(workflow="wf-test:0")

    def workflow_cancelled() -> None:
        redis_client.hset(broker.keyspace.workflow("wf-test"), "status", "cancelled")
        the_interval_passes(broker, redis_client)

    broker.meanwhile = workflow_cancelled
    assert runner.thread.admit(step) is False
    assert runner.writer.pending() == 1  # recorded as cancelled
    assert broker.start_turn("emails") == 0


def test_a_stop_ends_the_wait_for_a_turn_and_hands_the_task_back(
    broker: TurnBroker, runner: Runner
) -> None:
    """A turn a minute off is waited for out of the way, not in the thread: the stop puts the
    task back in the buffer, whose close returns it for release."""
    assert runner.thread.admit(runner.reservation) is False  # the thread is free at once
    assert broker.waiting.is_set()
    runner.pacer.stop()
    assert runner.buffer.close() == [runner.reservation]
    assert runner.released == []  # released with the buffer's other unstarted tasks
