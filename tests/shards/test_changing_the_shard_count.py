"""Changing ``queue_shards`` between deploys while a queue holds tasks (docs/scaling.md,
Changing the shard count): nothing is half-served, and the checks say what was left behind."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.keys import queue_parts, shard_of
from django_threadmill.checks import check_redis
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import task_backends
from tests.broker.conftest import finish, new_task, start
from tests.conftest import tasks_setting

HOUR_MS = 3_600_000


@contextmanager
def configured(
    redis_url: str, key_prefix: str, shards: int | None
) -> Iterator[ThreadmillTaskBackend]:
    """Yield the backend of ``key_prefix`` with "default" split ``shards`` ways (None: unset)."""
    options = {} if shards is None else {"queue_shards": {"default": shards}}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, **options)):
        backend = task_backends["default"]
        assert isinstance(backend, ThreadmillTaskBackend)
        yield backend


def layout_warnings(backend: ThreadmillTaskBackend) -> list[str]:
    return [m.msg for m in check_redis(backend) if m.id == "threadmill.W008"]


def test_shard_counts_share_no_part() -> None:
    """3 and 6 shards once both named shard 0 "default#0.3": a worker with 6 took a task
    stored with 3 from it, ran it, and its finish went to another shard (stale), so the task
    ran again at each lease expiry."""
    for old, new in [(3, 6), (2, 3), (4, 8), (1, 2)]:
        assert not set(queue_parts("default", "default", old)) & set(
            queue_parts("default", "default", new)
        )


def test_a_task_stored_under_another_count_is_not_half_served(
    redis_url: str, key_prefix: str
) -> None:
    """A worker with 6 shards never reserves a task stored with 3, which one with 3 then runs."""
    task = next(t for t in iter(lambda: new_task("default"), None) if shard_of(t.id, 6) == 3)
    with configured(redis_url, key_prefix, 3) as old:
        old.broker.enqueue("default", [task])
    with configured(redis_url, key_prefix, 6) as new:
        assert new.broker.acquire("default", 5).reservations == []
    with configured(redis_url, key_prefix, 3) as old:
        [reservation] = old.broker.acquire("default", 5).reservations
        lease = reservation.lease
        assert old.broker.start("w", [start(lease)]) == []
        assert old.broker.finish("w", [finish(lease)]) == []
        assert old.broker.record(task.id)["state"] == "successful"  # type: ignore[index]


@pytest.mark.parametrize(
    ("before", "after", "stored", "now", "hint"),
    [
        (None, 4, "no shards", "4 shards", "without 'default'"),
        (4, 2, "4 shards", "2 shards", "{'default': 4}"),
        (4, None, "4 shards", "no shards", "{'default': 4}"),
        (4, 1, "4 shards", "no shards", "{'default': 4}"),
    ],
)
def test_the_checks_name_tasks_left_under_the_old_count(
    redis_url: str,
    key_prefix: str,
    before: int | None,
    after: int | None,
    stored: str,
    now: str,
    hint: str,
) -> None:
    """Ready, delayed and reserved tasks all count; the hint names the setting that runs them."""
    with configured(redis_url, key_prefix, before) as old:
        tasks = [new_task("default") for _ in range(3)]
        tasks.append(new_task("default", run_after_ms=now_ms() + HOUR_MS))
        old.broker.enqueue("default", tasks)
        assert len(old.broker.acquire("default", 12).reservations) == 3  # held: still counted
        assert layout_warnings(old) == []
    with configured(redis_url, key_prefix, after) as new:
        [message] = [m for m in check_redis(new) if m.id == "threadmill.W008"]
    assert message.msg.endswith(
        f"queue 'default' holds 4 waiting, delayed or running task(s) stored under {stored}, "
        f"but OPTIONS['queue_shards'] gives it {now}: no worker or reaper with these settings "
        "runs or reaps them, and get_result does not find them."
    )
    assert message.hint == (
        f"Keep a worker and threadmill_reap running with OPTIONS['queue_shards'] {hint} until "
        "this warning is gone (docs/scaling.md, Changing the shard count)."
    )


def test_a_drained_old_count_warns_no_more(redis_url: str, key_prefix: str) -> None:
    with configured(redis_url, key_prefix, 4) as old:
        task = new_task("default")
        old.broker.enqueue("default", [task])
    with configured(redis_url, key_prefix, 2) as new:
        assert len(layout_warnings(new)) == 1
    with configured(redis_url, key_prefix, 4) as old:
        [reservation] = old.broker.acquire("default", 4).reservations
        assert old.broker.finish("w", [finish(reservation.lease)]) == []
    with configured(redis_url, key_prefix, 2) as new:
        assert layout_warnings(new) == []


def test_a_worker_start_records_its_count(redis_url: str, key_prefix: str) -> None:
    """A process that registered its queues at start enqueues without registering them
    again: the count must be recorded then, or its tasks would go unwatched."""
    with configured(redis_url, key_prefix, 4) as old:
        old.broker.register_queues(["default"])
        old.broker.enqueue("default", [new_task("default")])
    with configured(redis_url, key_prefix, None) as new:
        assert len(layout_warnings(new)) == 1


def test_a_recorded_count_int_refuses_is_no_count(redis_url: str, key_prefix: str) -> None:
    """A layout written by hand whose count is a digit ``int()`` refuses ("²", which
    ``isdigit`` takes) failed ``manage.py check`` with a ValueError."""
    with configured(redis_url, key_prefix, 4) as old:
        old.broker.enqueue("default", [new_task("default")])
        old.broker.client.sadd(old.broker.keyspace.layouts, "default#²")
    with configured(redis_url, key_prefix, 2) as new:
        assert len(layout_warnings(new)) == 1
