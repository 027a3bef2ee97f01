"""manage.py threadmill_queue on a queue only Redis knows, and what forget-damaged --all says.

A queue renamed out of QUEUES (or enqueued to by another deploy) still holds tasks: the command
pauses, resumes and inspects it as the admin does; a name neither has is refused, naming both.
``forget-damaged --all`` lists exactly the entries it dropped, each read and dropped in one step.
"""

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.core.management import CommandError
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.compat import task_backends
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.support import output_of

ENTRY = "1700000000000 acquire: its key holds no hash"  # as a script writes a damaged entry


@pytest.fixture
def renamed(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> Iterator[ThreadmillTaskBackend]:
    """The backend after queue emails, which holds a task, left QUEUES (renamed, say)."""
    echo.using(queue_name="emails").enqueue(1)
    setting = tasks_setting(redis_url, key_prefix)
    setting["default"] = {**setting["default"], "QUEUES": ["default", "reports"]}  # type: ignore[dict-item]
    with override_settings(TASKS=setting):
        found = task_backends["default"]
        assert isinstance(found, ThreadmillTaskBackend)
        yield found


def test_a_queue_only_redis_knows_is_paused_and_resumed(renamed: ThreadmillTaskBackend) -> None:
    """Before: "Queue 'emails' is not in TASKS['default']['QUEUES']", while it held a task."""
    assert output_of("threadmill_queue", "pause", "emails").startswith(
        "Paused queue emails of backend default: workers take none of its tasks"
    )
    assert "emails" in Inspector(renamed.broker).paused(["emails"])

    assert output_of("threadmill_queue", "resume", "emails") == (
        "Resumed queue emails of backend default: idle workers were woken to take its tasks.\n"
    )
    assert Inspector(renamed.broker).paused(["emails"]) == {}


@pytest.mark.parametrize(
    "args",
    [
        ["pause", "emials"],
        ["resume", "emials"],
        ["damaged", "default", "emials"],
        ["forget-damaged", "emials", "--all"],
        ["forget-damaged", "emials", "some-id"],
    ],
)
@pytest.mark.usefixtures("renamed")
def test_a_queue_neither_configured_nor_seen_is_refused_naming_both(args: list[str]) -> None:
    """Before: damaged and forget-damaged took any name ("No damaged records in emials.",
    "Forgot 0 ..."), and pause named QUEUES only, not the queue Redis holds."""
    with pytest.raises(CommandError) as raised:
        output_of("threadmill_queue", *args)
    assert str(raised.value) == (
        "Queue 'emials' is not in TASKS['default']['QUEUES'] (default and reports) nor one Redis "
        "knows (emails). Add it there or pick one of those."
    )


def test_a_queue_named_twice_is_listed_once(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Before: each of its records was listed twice."""
    redis_client.hset(backend.broker.queue_keys("emails").damaged, "gone@emails", ENTRY)
    assert output_of("threadmill_queue", "damaged", "emails", "emails") == (
        "queue=emails id=gone@emails at=2023-11-14T22:13:20+00:00 script=acquire "
        "reason=its key holds no hash\n"
    )


def test_forget_all_lists_each_entry_it_dropped_in_batches(
    backend: ThreadmillTaskBackend, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """forget_damaged.lua drops a bounded batch a call; an id that is not UTF-8 is listed
    escaped, as ``damaged`` lists it."""
    monkeypatch.setattr(backend.broker, "MAX_LISTED", 2)
    key = backend.broker.queue_keys("emails").damaged
    ids = [f"t{n}@emails".encode() for n in range(4)] + [b"\xff"]
    with redis.Redis.from_url(redis_url) as raw:
        raw.hset(key, mapping=dict.fromkeys(ids, ENTRY))

        lines = output_of("threadmill_queue", "forget-damaged", "emails", "--all").splitlines()

        assert raw.exists(key) == 0
    assert sorted(line.split()[1] for line in lines[:-1]) == [
        "id=\\xff",
        *(f"id=t{n}@emails" for n in range(4)),
    ]
    assert lines[-1] == (
        "Forgot 5 damaged record(s) of queue emails: those listed above, read and dropped in "
        "one step."
    )
    assert output_of("threadmill_queue", "forget-damaged", "emails", "--all") == (
        "Forgot 0 damaged record(s) of queue emails: it had none.\n"
    )


def test_forget_all_drops_exactly_what_it_reports_while_a_script_sets_one_aside(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry set aside right after the command's first call on the damaged list is either
    reported and dropped, or left in place: never dropped unreported. Before: the command
    counted the list (HLEN), then deleted it (DEL), so it said "Forgot 1" and dropped 2."""
    key = backend.broker.queue_keys("emails").damaged
    redis_client.hset(key, "seen@emails", ENTRY)
    client = backend.broker.client
    send = client.execute_command
    planted: list[bool] = []

    def set_aside_after_first_touch(*args: Any, **options: Any) -> Any:
        reply = send(*args, **options)
        if key in args and not planted:
            planted.append(True)
            redis_client.hset(key, "late@emails", ENTRY)  # as a script sets a record aside
        return reply

    monkeypatch.setattr(client, "execute_command", set_aside_after_first_touch)
    out = output_of("threadmill_queue", "forget-damaged", "emails", "--all")

    assert planted
    reported = [line.split()[1].removeprefix("id=") for line in out.splitlines()[:-1]]
    assert f"Forgot {len(reported)} damaged record(s)" in out.splitlines()[-1]
    assert "seen@emails" in reported
    assert sorted(reported + redis_client.hkeys(key)) == ["late@emails", "seen@emails"]


def test_with_queues_empty_any_queue_name_is_taken(redis_url: str, key_prefix: str) -> None:
    """Tasks may then go to any queue: one can be paused before its first task, as before."""
    setting = tasks_setting(redis_url, key_prefix)
    with override_settings(TASKS={"default": {**setting["default"], "QUEUES": []}}):
        assert output_of("threadmill_queue", "pause", "nightly").startswith(
            "Paused queue nightly of backend default:"
        )
        assert output_of("threadmill_queue", "resume", "nightly").startswith("Resumed")
