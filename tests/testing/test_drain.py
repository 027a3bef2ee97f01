"""drain(): the worker's parts run in the test's own thread against the real Redis, until the
queues are empty, with priorities, retries, delays, unique tasks, limits and leases as a worker
has them."""

import itertools
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
from django.test import override_settings
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable, ImproperlyConfiguredThreadmill
from django_threadmill.testing import Threadmill, drain
from django_threadmill.worker.reaper import reap_once
from tests.conftest import tasks_setting

from . import tasks


def labels() -> list[str]:
    return [label for label, _ in tasks.runs]


def test_tasks_run_in_the_calling_thread_and_the_count_comes_back(threadmill: Threadmill) -> None:
    results = [tasks.record.enqueue(str(n)) for n in range(3)]
    assert threadmill.drain() == 3
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.return_value == threading.get_ident()
    assert threadmill.drain() == 0


def test_higher_priority_runs_first_then_in_enqueue_order(threadmill: Threadmill) -> None:
    tasks.record.enqueue("low 1")
    tasks.record.using(priority=10).enqueue("high")
    tasks.record.enqueue("low 2")
    threadmill.drain()
    assert labels() == ["high", "low 1", "low 2"]


def test_a_retried_task_runs_until_its_policy_gives_up(threadmill: Threadmill) -> None:
    result = tasks.always_fails.enqueue()
    assert threadmill.drain() == 3
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 3
    assert [error.exception_class for error in result.errors] == [ConnectionError] * 3


def test_delayed_tasks_due_within_the_wait_run_and_later_ones_stay(threadmill: Threadmill) -> None:
    for _attempt in range(20):  # a loaded machine may end the first drain after "soon" is due
        tasks.runs.clear()
        soon_at = timezone.now() + timedelta(milliseconds=200)
        soon = tasks.record.using(run_after=soon_at).enqueue("soon")
        later = tasks.record.using(run_after=soon_at + timedelta(hours=1)).enqueue("later")
        due = tasks.record.using(run_after=timezone.now()).enqueue("due")
        ran = threadmill.drain(wait_for_delayed=0)
        if timezone.now() < soon_at:
            break
        threadmill.drain()  # "soon", if that drain left it, must not run in the next attempt's
    else:
        pytest.fail('every first drain ended after "soon" was due')
    assert ran == 1
    assert labels() == ["due"]
    assert threadmill.drain(wait_for_delayed=timedelta(seconds=5)) == 1
    assert labels() == ["due", "soon"]
    for result, status in [(soon, "SUCCESSFUL"), (later, "READY"), (due, "SUCCESSFUL")]:
        result.refresh()
        assert result.status == TaskResultStatus[status]


def test_a_retry_due_past_the_wait_stays_queued(threadmill: Threadmill) -> None:
    result = tasks.fails_then_waits_a_minute.enqueue()
    assert threadmill.drain() == 1
    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert len(result.errors) == 1


def test_a_unique_task_is_one_until_it_finished(threadmill: Threadmill) -> None:
    first = tasks.unique.enqueue("a")
    assert tasks.unique.enqueue("a").id == first.id
    assert threadmill.drain() == 1
    assert tasks.unique.enqueue("a").id != first.id  # its finish released the claim
    assert threadmill.drain() == 1


def test_a_rate_limited_queue_is_drained_at_its_rate(
    threadmill: Threadmill, redis_url: str, key_prefix: str
) -> None:
    limits = {"reports": {"concurrency": 1, "rate": "600/m"}}  # one start every 100 ms
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, queue_limits=limits)):
        for n in range(3):
            tasks.record_report.enqueue(str(n))
        assert threadmill.drain(queues=["reports"]) == 3
    starts = [at for _, at in tasks.runs]
    # Turns are on the Redis clock and stamped here a moment later: one late stamp shortens the
    # gap after it, so each gap keeps half an interval of slack, and the span keeps it once.
    assert all(later - earlier >= 0.05 for earlier, later in itertools.pairwise(starts))
    assert starts[-1] - starts[0] >= 2 * 0.1 - 0.05


def test_async_tasks_run_on_a_loop_whose_sync_calls_come_back_here(
    threadmill: Threadmill,
) -> None:
    result = tasks.threads_seen.enqueue()
    assert threadmill.drain() == 1
    result.refresh()
    loop_thread, sync_call_thread = result.return_value
    assert loop_thread != threading.get_ident()
    assert sync_call_thread == threading.get_ident()


@pytest.fixture
def reaper(backend: ThreadmillTaskBackend) -> Iterator[None]:
    """A reaper settling expired leases every 20 ms while the test runs."""
    stop = threading.Event()

    def reap() -> None:
        while not stop.wait(0.02):
            reap_once(backend)

    thread = threading.Thread(target=reap, name="test-reaper")
    thread.start()
    yield
    stop.set()
    thread.join()


@pytest.mark.parametrize("tasks_options", [{"lease_ttl": 1.0}])
@pytest.mark.usefixtures("reaper")
def test_leases_are_renewed_between_tasks_so_a_reaper_takes_none(
    threadmill: Threadmill,
) -> None:
    # One batch holds all three for 1.8 s: unrenewed, the last lease would lapse before that
    # task starts (at 1.2 s), and the reaper would hand it back to run again.
    results = [tasks.take.enqueue(0.6, str(n)) for n in range(3)]
    assert threadmill.drain() == 3
    assert sorted(labels()) == ["0", "1", "2"]
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL


def test_metrics_are_sent_when_it_ends(
    threadmill: Threadmill, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    tasks.record.enqueue("a")
    threadmill.drain()
    stats = backend.broker.queue_keys("default").stats
    assert redis_client.hget(stats, "successful") == "1"


def test_flush_deletes_the_prefix_keys_and_no_lookalike(
    threadmill: Threadmill,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    key_prefix: str,
) -> None:
    tasks.record.enqueue("a")
    lookalike = f"{key_prefix}:other:{{default:default}}:ready"  # the prefix "<ours>:other"
    redis_client.set(lookalike, "1")
    threadmill.flush()
    assert redis_client.keys(f"{key_prefix}:*") == [lookalike]
    tasks.record.enqueue("b")  # the queue is made known again, as on a fresh Redis
    assert redis_client.smembers(backend.broker.keyspace.queues) == {"default"}
    assert threadmill.drain() == 1


def test_bad_arguments_are_refused_naming_the_fix() -> None:
    with pytest.raises(ValueError, match="wait_for_delayed=-1 is not a wait"):
        drain(wait_for_delayed=-1)
    with pytest.raises(ImproperlyConfiguredThreadmill, match="Queue 'nope' is not in TASKS"):
        drain(queues=["nope"])
    message = "queues='emails' is one string, not a list of queue names. Pass a list, e.g. "
    with pytest.raises(TypeError, match=f"^{message}queues=\\['emails'\\]\\.$"):
        drain(queues="emails")


def test_an_empty_list_of_queues_is_refused_not_read_as_every_queue(
    threadmill: Threadmill,
) -> None:
    """A list the caller filtered down to nothing drained every queue in QUEUES."""
    tasks.record.enqueue("left alone")
    with pytest.raises(ValueError, match=r"^queues is empty: it names no queue to serve\."):
        threadmill.drain(queues=[])
    assert threadmill.drain() == 1  # the task is still there


async def test_it_refuses_to_run_inside_an_event_loop() -> None:
    with pytest.raises(RuntimeError, match="this thread is running an event loop"):
        drain()


def test_a_queue_of_another_type_fails_the_drain_once_the_others_ran(
    threadmill: Threadmill,
) -> None:
    """Its error reaches the test, and the tasks reserved beside it in the same call run
    first: they were leased, and would otherwise wait for a reaper a test does not have."""
    result = tasks.record.enqueue("beside")
    broker = result.task.get_backend().broker
    broker.client.set(broker.queue_keys("reports").ready, "another program's value")
    with pytest.raises(BrokerUnavailable, match="wrong kind"):
        threadmill.drain(queues=["default", "reports"])
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
