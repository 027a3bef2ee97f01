"""A running worker obeys ``threadmill_queue pause`` at once, idles without polling, and runs the
queue's tasks once it is resumed."""

import threading
from collections.abc import Callable

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker.prefetcher import IDLE_BLOCK_S
from testproject.example.tasks import add
from tests.pausing import looked_again, still_ready, succeeded
from tests.support import Command, run_to_completion, running, script_calls, wait_until

from .support import WatchedBroker, idle_prefetcher

WINDOW_S = 1.0  # measured stretch of idleness
MOST_CALLS = 5  # a heartbeat or a metrics send may fall in the window; a busy loop makes hundreds


def queue_command(redis_url: str, key_prefix: str, *args: str) -> str:
    """Run ``manage.py threadmill_queue`` in a subprocess, as an operator would; return its log."""
    return run_to_completion(Command(redis_url, key_prefix, "threadmill_queue", *args))


def test_pause_holds_new_tasks_ready_while_the_worker_runs_and_resume_runs_them(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    with running(start_worker("--threads", "2")):
        first = add.enqueue(1, 1)
        wait_until(lambda: succeeded(first), "the worker running a task before the pause")

        paused = queue_command(redis_url, key_prefix, "pause", "default", "--reason", "a test")
        assert "Paused queue default of backend default: workers take none" in paused
        held = [add.enqueue(n, n) for n in range(3)]
        looked_again(backend, redis_client)
        assert still_ready(held)

        before = script_calls(redis_client)
        threading.Event().wait(WINDOW_S)  # a measurement window, not synchronisation
        assert script_calls(redis_client) - before <= MOST_CALLS  # idle: blocked, not polling
        assert still_ready(held)

        again = queue_command(redis_url, key_prefix, "pause", "default")
        assert "was paused already since " in again
        assert "(a test); nothing changed." in again

        resumed = queue_command(redis_url, key_prefix, "resume", "default")
        assert "Resumed queue default of backend default" in resumed
        for result in held:
            wait_until(lambda r=result: succeeded(r), "the held tasks running after resume")


def test_a_worker_started_after_the_pause_obeys_it(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    queue_command(redis_url, key_prefix, "pause", "default")
    held = add.enqueue(2, 3)
    with running(start_worker()):
        looked_again(backend, redis_client)
        assert still_ready([held])
        queue_command(redis_url, key_prefix, "resume", "default")
        wait_until(lambda: succeeded(held), "the held task running after resume")


def test_every_idle_round_on_a_paused_queue_ends_in_the_longest_block(
    watched_broker: WatchedBroker,
) -> None:
    """A paused queue with READY tasks, beside an empty one: each round of the prefetcher makes
    one acquire, then blocks for the longest idle wait, exactly as for empty queues."""
    broker = watched_broker
    for n in range(3):
        add.enqueue(n, n)
    broker.pause("default", "test")
    prefetcher = idle_prefetcher(broker, ("default", "emails"))

    for _ in range(5):
        prefetcher._round()  # the loop's body, run here: the thread is never started

    assert broker.acquires == 5
    assert broker.waits_s == [IDLE_BLOCK_S] * 5
