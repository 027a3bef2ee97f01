"""Say, in a warning, what a ``drain()`` leaves unrun that the test may have meant it to run
(docs/testing.md, What a drain leaves): its count alone would not say why it is short.

- Tasks due later than ``wait_for_delayed`` (a ``run_after`` an hour away, a retry's backoff):
  how many, when the next is due, and how to have them run.
- Tasks enqueued with ``enqueue_on_commit`` whose write still waits for a commit the test's
  transaction never makes (a ``TestCase``'s): they are not stored, so no drain can run them.
- Tasks in a paused queue (paused earlier in the test, or a pause an earlier test or run left
  in Redis): a drain, like a worker, takes none of them until it is resumed.
- Tasks of a queue whose concurrency limit others hold full (a worker the test started, a
  reservation the test made, the lease of a process that died): the drain gets none of them.
- Tasks a pytest fixture enqueued before the ``threadmill`` fixture was set up: its flush
  before the test deleted them (under pytest-xdist, they went to keys the test does not use).
- Tasks a TestCase's ``setUpClass`` or ``setUpTestData`` enqueued, or its ``fixtures`` as they
  loaded: ``ThreadmillTestMixin``'s flush before the class's first test deleted them.
"""

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import connections

from ..backend import ThreadmillTaskBackend
from ..broker import Broker
from ..broker.inspect.inspector import Inspector
from ..compat import TaskResult, task_enqueued
from ..enqueue.on_commit import waiting_writes

logger = logging.getLogger(__name__)
MOST_SECONDS = timedelta.max // timedelta(seconds=1)  # beyond, a timedelta overflows


def say_left_for_later(
    broker: Broker, queues: Sequence[str], next_due_ms: int, horizon_ms: int, ran: int
) -> None:
    """Warn that tasks stay queued in ``queues``, the next due in ``next_due_ms``, past the
    drain's ``horizon_ms``: how many, when, and the fix. A rate limit's next start with no
    task left is no task left."""
    holding = Inspector(broker).holding(queues)
    left = sum(holding.values())
    if not left:
        return
    logger.warning(
        "drain() returned %d and left %d task%s in the queues %s, the next due in %s: later "
        "than wait_for_delayed=%s s. Delayed tasks and retries fall due on Redis's clock, which "
        "freezegun and time-machine do not move.%s Pass drain(wait_for_delayed=...) a longer "
        "wait, or give the test a shorter run_after or retry delay%s.",
        ran,
        left,
        "" if left == 1 else "s",
        list(queues),
        _due_in(next_due_ms),
        horizon_ms / 1000,
        *_rate_limits_of(broker, holding),  # the queues left holding tasks
    )


def _rate_limits_of(broker: Broker, queues: Iterable[str]) -> tuple[str, str]:
    """Name the rate limits of ``queues`` that hold tasks, and their fix, for the warning: a
    task such a limit held back is due at the limit's next start, and the warning spoke only
    of delays and retries."""
    rates = {
        queue: rate
        for queue in queues
        if (rate := broker.settings.limit_of(queue).rate) is not None
    }
    if not rates:
        return "", ""
    named = ", ".join(f"{queue!r}: {rate}" for queue, rate in rates.items())
    return (
        f" Rate limits ({named}) space their queues' starts on that clock too.",
        ", or a faster rate in OPTIONS['queue_limits']",
    )


def _due_in(ms: int) -> str:
    """Return ``ms`` to come as a ``timedelta`` reads, to the second, or in seconds under a
    minute (a rate limit's next start is often a fraction of one): a retry delayed by
    ``timedelta.max`` is due in more days than a ``timedelta`` holds."""
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    seconds = round(ms / 1000)
    if seconds > MOST_SECONDS:
        return f"over {timedelta.max.days:,} days"
    return str(timedelta(seconds=seconds))


def say_paused(broker: Broker, queues: Sequence[str], ran: int) -> None:
    """Warn about each of ``queues``, which answered the drain's last look as paused, that
    holds tasks: how many, who paused it and why, and the fix."""
    inspector = Inspector(broker)
    pauses = inspector.paused(queues)
    for queue, left in inspector.holding(queues).items():
        if queue not in pauses:
            continue
        pause = pauses[queue]
        logger.warning(
            "drain() returned %d and left %d task%s in the queue %r, which is paused (by %s%s): "
            "a paused queue hands none of its tasks to a drain, as to a worker. Resume it "
            "before the drain: in the test, task_backends[%r].broker.resume(%r, by='the "
            "test'); a pause left in Redis, with `manage.py threadmill_queue resume %s "
            "--backend %s` or the admin's Resume… button (docs/lifecycle.md, Pausing a queue).",
            ran,
            left,
            "" if left == 1 else "s",
            queue,
            pause.by,
            f", reason: {pause.reason!r}" if pause.reason else "",
            broker.settings.alias,
            queue,
            queue,
            broker.settings.alias,
        )


def say_slots_held(broker: Broker, queues: Sequence[str], ran: int) -> None:
    """Warn about each of ``queues``, whose concurrency limit others held full at the drain's
    last look, that holds tasks: how many, the limit, who may hold it, and the fix."""
    for queue, left in Inspector(broker).holding(queues).items():
        logger.warning(
            "drain() returned %d and left %d task%s in the queue %r, whose concurrency limit "
            "of %d was held full by tasks this drain did not take: a worker's, a reservation "
            "the test made, or a lease of a process that died, which holds its slot until the "
            "reaper settles it (docs/schedules.md, Per-queue limits). Let those tasks finish "
            "(or reap them) before the drain, or raise the queue's 'concurrency' in "
            "OPTIONS['queue_limits'] for the test.",
            ran,
            left,
            "" if left == 1 else "s",
            queue,
            broker.settings.limit_of(queue).concurrency,
        )


def say_waiting_for_commit() -> None:
    """Warn about each database whose open transaction holds enqueues waiting for its commit:
    how many tasks, which, and the fix."""
    for alias, paths in _waiting_for_commit().items():
        named = ", ".join(_counted(path, count) for path, count in paths.most_common(3))
        logger.warning(
            "drain() cannot run %d task%s enqueued with enqueue_on_commit (%s): they are stored "
            "when the transaction of database %r commits, and a TestCase's never does. Enqueue "
            "inside `with self.captureOnCommitCallbacks(execute=True):` (pytest-django: the "
            "django_capture_on_commit_callbacks fixture, execute=True) and drain after that "
            "block, or after the atomic() block that holds them.",
            paths.total(),
            "" if paths.total() == 1 else "s",
            named,
            alias,
        )


def _counted(path: str, count: int) -> str:
    return f"{path!r}" if count == 1 else f"{path!r} x{count}"


def _waiting_for_commit() -> dict[str, Counter[str]]:
    """Return, per database in a transaction, the paths of the tasks whose enqueue waits for
    its commit and has not run (``captureOnCommitCallbacks`` runs them and leaves them listed)."""
    waiting = {}
    for connection in connections.all(initialized_only=True):
        paths = Counter(path for write in waiting_writes(connection) for path in write.task_paths)
        if paths:
            waiting[connection.alias] = paths
    return waiting


@contextmanager
def tasks_stored() -> Iterator[list[TaskResult]]:
    """Collect the results of the tasks a ThreadmillTaskBackend stores inside the block, in any
    thread."""
    stored: list[TaskResult] = []

    def note(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        if issubclass(sender, ThreadmillTaskBackend):
            stored.append(task_result)

    task_enqueued.connect(note, weak=False)
    try:
        yield stored
    finally:
        task_enqueued.disconnect(note)


def say_flushed_first(results: Sequence[TaskResult], fixture_of: Mapping[str, str]) -> None:
    """Warn that the ``threadmill`` fixture starts the test without ``results``, which the
    test's fixtures set up before it enqueued: how many, which, the fixtures that enqueued
    them (``fixture_of``, by task id), and the fix."""
    if not results:
        return
    fixtures = list(dict.fromkeys(f for r in results if (f := fixture_of.get(r.id)) is not None))
    by = (
        f", by the fixture{'' if len(fixtures) == 1 else 's'} "
        + ", ".join(repr(fixture) for fixture in fixtures)
        if fixtures
        else ""
    )
    logger.warning(
        "drain() cannot run %d task%s enqueued before the threadmill fixture was set up (%s%s): "
        "the fixture starts the test from an empty Redis, so its flush deleted them (under "
        "pytest-xdist they went to keys other than the worker's own, which the test uses). "
        "Have the fixture that enqueues them ask for threadmill (def order(threadmill): ...), "
        "or list threadmill before it in the test's arguments (an autouse fixture is set up "
        "before the test's arguments: it asks for threadmill); enqueue in the test or in a "
        "function-scoped fixture, as a fixture of a wider scope is set up before threadmill, "
        "and a setup_method or setup_function runs before the test's fixtures.",
        len(results),
        "" if len(results) == 1 else "s",
        _paths_of(results),
        by,
    )


def say_flushed_before_the_class(
    results: Sequence[TaskResult], test_class: type, models_of: Mapping[str, str]
) -> None:
    """Warn that ``ThreadmillTestMixin`` starts the tests of ``test_class`` without
    ``results``, which it enqueued as it set up: how many, which, and the fix. Those
    ``models_of`` maps to a model (by id) were enqueued as a fixture's row of it was saved."""
    _say_fixtures_flushed([r for r in results if r.id in models_of], test_class, models_of)
    set_up = [result for result in results if result.id not in models_of]
    if not set_up:
        return
    logger.warning(
        "drain() cannot run %d task%s enqueued in setUpClass or setUpTestData of %s (%s): "
        "ThreadmillTestMixin starts each test from an empty Redis, so its flush before the "
        "first test deleted them. Redis is not rolled back with the database, so a task "
        "enqueued once for the class would run in one test only: enqueue in setUp, after "
        "super().setUp(), or in the test (docs/testing.md, Keys are flushed around each test).",
        len(set_up),
        "" if len(set_up) == 1 else "s",
        test_class.__qualname__,
        _paths_of(set_up),
    )


def _say_fixtures_flushed(
    results: Sequence[TaskResult], test_class: type, models_of: Mapping[str, str]
) -> None:
    """Warn that the rows the fixtures of ``test_class`` loaded enqueued ``results``: a
    TestCase loads them once for the class, and the flush before its first test deleted them.
    The warning about setUpTestData named a method the class may not have, and a fix (enqueue
    in setUp) that does not fit a fixture."""
    if not results:
        return
    fixtures = getattr(test_class, "fixtures", None)
    loaded = (
        f"as the fixtures {list(fixtures)} of {test_class.__qualname__} loaded"
        if fixtures
        else f"as fixtures loaded in setUpClass or setUpTestData of {test_class.__qualname__}"
    )
    models = ", ".join(dict.fromkeys(models_of[result.id] for result in results))
    logger.warning(
        "drain() cannot run %d task%s enqueued %s (%s, saving rows of %s): a TestCase loads its "
        "fixtures once for the class, and ThreadmillTestMixin starts each test from an empty "
        "Redis, so its flush before the first test deleted them. Have the receiver that "
        "enqueues skip a fixture's rows (loaddata saves them with raw=True), or make the class "
        "a TransactionTestCase, which loads its fixtures before each test: what they enqueue "
        "is then the test's (docs/testing.md, Keys are flushed around each test).",
        len(results),
        "" if len(results) == 1 else "s",
        loaded,
        _paths_of(results),
        models,
    )


def _paths_of(results: Sequence[TaskResult]) -> str:
    """Name the tasks of ``results``, the three most enqueued, each with its count."""
    paths = Counter(result.task.module_path for result in results)
    return ", ".join(_counted(path, count) for path, count in paths.most_common(3))
