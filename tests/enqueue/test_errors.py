"""Bad input and unusable Redis fail at enqueue with the problem and the fix; nothing is written."""

import asyncio
import math
import re
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
import redis
from django.test import override_settings

from django_threadmill.compat import InvalidTask, Task, task_backends
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.workflows import chain, step
from testproject.example.tasks import echo
from tests.backend_support import redis_with_password
from tests.conftest import tasks_setting
from tests.servers.redis_server import free_port, redis_process

ECHO = "testproject.example.tasks.echo"


@pytest.fixture
def nothing_written(redis_client: redis.Redis, key_prefix: str) -> Iterator[None]:
    """Fail the test if it leaves any key of its prefix in Redis."""
    yield
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


@pytest.fixture(params=["enqueue", "aenqueue"])
def enqueue(request: pytest.FixtureRequest) -> Callable[..., object]:
    def through(task: Task, *args: object, **kwargs: object) -> object:
        if request.param == "enqueue":
            return task.enqueue(*args, **kwargs)
        return asyncio.run(task.aenqueue(*args, **kwargs))

    return through


@pytest.mark.parametrize(
    ("value", "what", "problem"),
    [
        (
            datetime(2030, 1, 1, tzinfo=UTC),
            "is a datetime",
            "Unsupported type: <class 'datetime.datetime'>",
        ),
        (date(2030, 1, 1), "is a date", "Unsupported type: <class 'datetime.date'>"),
        ({1, 2}, "is a set", "Unsupported type: <class 'set'>"),
        (Decimal("1.5"), "is a Decimal", "Unsupported type: <class 'decimal.Decimal'>"),
        (b"\xff\xfe", "is bytes that are not UTF-8", "Unsupported value: <class 'bytes'>"),
    ],
)
def test_unsupported_argument_types(
    enqueue: Callable[..., object], nothing_written: None, value: object, what: str, problem: str
) -> None:
    message = (
        f"Arguments of task {ECHO!r} cannot be stored as JSON: args[0] {what} ({problem}). "
        "Pass strings, numbers, booleans, None, lists and dicts with string keys only."
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        enqueue(echo, value)
    with pytest.raises(TypeError, match=re.escape(f": kwargs['value'][0]['nested'] {what} (")):
        enqueue(echo, value=[{"nested": value}])


@pytest.mark.parametrize(
    ("args", "kwargs", "where"),
    [
        # Before, only the type was named: finding the one datetime among many rows was the
        # caller's work.
        (
            (1, [2, {"a": [3, 4]}]),
            {"rows": [{"id": 1}, {"id": 2, "at": date(2030, 1, 1)}]},
            "kwargs['rows'][1]['at'] is a date",
        ),
        # Before: "unhashable type: 'list'", naming neither the key nor where it was.
        (({"ok": {(1, 2): "x"}},), {}, "args[0]['ok'] has the key (1, 2), a tuple, not a JSON key"),
        ((), {"total": 10**5000}, "kwargs['total'] is an int of about 5000 digits"),
    ],
    ids=["nested-value", "key", "huge-int"],
)
def test_an_unstorable_value_is_named_by_its_place_in_the_arguments(
    enqueue: Callable[..., object],
    nothing_written: None,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    where: str,
) -> None:
    prefix = f"Arguments of task {ECHO!r} cannot be stored as JSON: {where} ("
    with pytest.raises(TypeError, match=f"^{re.escape(prefix)}"):
        enqueue(echo, *args, **kwargs)


def test_keys_that_json_would_merge(enqueue: Callable[..., object], nothing_written: None) -> None:
    message = (
        f"Arguments of task {ECHO!r} cannot be stored as JSON (keys 1 and '1' of one dict are "
        "both the JSON key '1', so one would be lost). Pass strings, numbers, booleans, None, "
        "lists and dicts with string keys only."
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        enqueue(echo, {1: "a", "1": "b"})
    with pytest.raises(TypeError, match=re.escape("keys 1 and '1' of one dict")):
        enqueue(echo, rows=[{"x": {1: "a", "1": "b"}}])


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats(
    enqueue: Callable[..., object], nothing_written: None, value: float
) -> None:
    message = (
        f"Arguments of task {ECHO!r} cannot be stored as JSON: args[0]['x'][0] is {value!r} "
        f"(Out of range float values are not JSON compliant: {value!r}). Pass strings, numbers, "
        "booleans, None, lists and dicts with string keys only."
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        enqueue(echo, {"x": [value]})


def test_queue_not_in_queues_is_refused_at_enqueue(
    redis_url: str, key_prefix: str, nothing_written: None
) -> None:
    setting = tasks_setting(redis_url, key_prefix)
    with override_settings(TASKS={"default": {**setting["default"], "QUEUES": []}}):
        nightly = echo.using(queue_name="nightly")
    with pytest.raises(InvalidTask, match=r"^Queue 'nightly' is not valid for backend\.$"):
        task_backends["default"].enqueue(nightly, (1,), {})


def test_bad_queue_name_is_refused(redis_url: str, key_prefix: str, nothing_written: None) -> None:
    setting = tasks_setting(redis_url, key_prefix)
    message = (
        "Queue name 'a b' is not valid for ThreadmillTaskBackend. Use 1-64 letters, digits, "
        "'_', '.' or '-', other than '.' or '..' (URLs read those as paths)."
    )
    with (
        override_settings(TASKS={"default": {**setting["default"], "QUEUES": []}}),
        pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"),
    ):
        echo.using(queue_name="a b")


@pytest.mark.parametrize("priority", [101, -101, 1.5])
def test_out_of_range_priority(nothing_written: None, priority: float) -> None:
    with pytest.raises(
        InvalidTask, match=r"^priority must be a whole number between -100 and 100\.$"
    ):
        echo.using(priority=priority)  # type: ignore[arg-type]


@pytest.mark.parametrize(("priority", "kind"), [(True, "a bool"), ("5", "a str")])
def test_a_priority_that_is_not_a_number_is_refused(
    nothing_written: None, priority: object, kind: str
) -> None:
    # A bool passed Django's range check and failed Redis's encoding, in a batch shared with
    # other callers' enqueues.
    message = f"Task {ECHO!r} has priority={priority!r}, {kind}. Pass an int from -100 to 100."
    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"):
        echo.using(priority=priority).enqueue(1)  # type: ignore[arg-type]


def test_a_nan_priority_is_refused(nothing_written: None) -> None:
    # Django's whole-number check ran int(nan) and raised a bare ValueError.
    message = f"Task {ECHO!r} has priority=nan, not a number. Pass an int from -100 to 100."
    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"):
        echo.using(priority=math.nan)  # type: ignore[arg-type]


def test_a_keyword_argument_not_named_by_a_str_is_refused(nothing_written: None) -> None:
    message = (
        f"Keyword argument 1 of task {ECHO!r} is named by an int, not a str. Name keyword "
        "arguments by str."
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        task_backends["default"].enqueue(echo, (), {1: "one"})


def test_a_run_after_that_is_not_a_datetime_is_refused(nothing_written: None) -> None:
    message = (
        f"Task {ECHO!r} has run_after=datetime.timedelta(seconds=60), a timedelta, not a "
        "datetime. Pass one, e.g. timezone.now() + timedelta(minutes=5)."
    )
    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"):
        echo.using(run_after=timedelta(minutes=1)).enqueue(1)  # type: ignore[arg-type]


# The UTC instant of each is outside the years a datetime can hold: stored, it read back as no
# run_after, while the task waited in the delayed index for ever (or past the year 9999).
UNREADABLE_RUN_AFTER = [
    datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5))),  # 10000-01-01 04:00 UTC
    datetime(1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))),  # 23:30 UTC in the year 0
]


def unreadable_run_after(run_after: datetime, read_in: str = "") -> str:
    """The message that refuses ``run_after`` on the echo task, as a pattern."""
    message = (
        f"Task {ECHO!r} has run_after={run_after!r}{read_in}, outside the years 1 to 9999 in "
        "UTC, so it cannot be stored and read back. Pass a time within them, e.g. "
        "timezone.now() + timedelta(days=365)."
    )
    return f"^{re.escape(message)}$"


@pytest.mark.parametrize("run_after", UNREADABLE_RUN_AFTER)
def test_a_run_after_that_cannot_be_read_back_is_refused(
    nothing_written: None, run_after: datetime
) -> None:
    with pytest.raises(InvalidTask, match=unreadable_run_after(run_after)):
        echo.using(run_after=run_after)


@override_settings(USE_TZ=False, TIME_ZONE="America/New_York")
def test_a_naive_run_after_that_is_in_the_year_10000_in_utc_is_refused(
    nothing_written: None,
) -> None:
    run_after = datetime(9999, 12, 31, 23, 0)  # 04:00 UTC the next day, without USE_TZ
    message = unreadable_run_after(run_after, " (naive: read in America/New_York)")
    with pytest.raises(InvalidTask, match=message):
        echo.using(run_after=run_after)


def test_enqueue_many_and_a_workflow_step_refuse_it_where_the_task_is_made(
    nothing_written: None,
) -> None:
    """Each path builds its task with using(), which validates it: nothing gets stored."""
    run_after = UNREADABLE_RUN_AFTER[0]
    with pytest.raises(InvalidTask, match=unreadable_run_after(run_after)):
        task_backends["default"].enqueue_many(echo.using(run_after=run_after), [((1,), {})])
    with pytest.raises(InvalidTask, match=unreadable_run_after(run_after)):
        chain(step(echo, 1), step(echo.using(run_after=run_after))).enqueue()


def test_naive_run_after_with_use_tz(nothing_written: None) -> None:
    with pytest.raises(InvalidTask, match=r"^run_after must be an aware datetime\.$"):
        echo.using(run_after=datetime(2030, 1, 1))


@pytest.mark.parametrize("tasks_options", [{"max_payload_bytes": 200}])
def test_oversized_payload(enqueue: Callable[..., object], nothing_written: None) -> None:
    size = len(
        f'{{"path":"{ECHO}","args":["{"x" * 300}"],"kwargs":{{}},"priority":0,"run_after_ms":null}}'
    )
    message = (
        f"Task {ECHO!r} payload is {size} bytes, above max_payload_bytes=200. Store large "
        "data elsewhere (a file or a model) and pass its key, or raise "
        "OPTIONS['max_payload_bytes']."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        enqueue(echo, "x" * 300)


def test_unreachable_redis(enqueue: Callable[..., object], key_prefix: str) -> None:
    location = f"redis://127.0.0.1:{free_port()}/0"
    message = (
        rf"^Redis at {re.escape(location)} is unreachable \(.+\)\. Start Redis or fix "
        r"TASKS LOCATION; nothing was written\.$"
    )
    with (
        override_settings(TASKS=tasks_setting(location, key_prefix, socket_connect_timeout=2)),
        pytest.raises(BrokerUnavailable, match=message),
    ):
        enqueue(echo, 1)


def test_wrong_password(enqueue: Callable[..., object], key_prefix: str) -> None:
    with redis_with_password("right-one") as server:
        location = f"redis://:wrong-one@127.0.0.1:{server.port}/0"
        with (
            override_settings(TASKS=tasks_setting(location, key_prefix)),
            pytest.raises(BrokerUnavailable) as raised,
        ):
            enqueue(echo, 1)
        assert str(raised.value).startswith(
            f"Redis at redis://:***@127.0.0.1:{server.port}/0 refused the credentials ("
        )
        assert str(raised.value).endswith(
            "Put the right user and password in LOCATION, e.g. 'redis://user:password@host:6379/0'."
        )
        assert "wrong-one" not in str(raised.value)
        assert redis.Redis.from_url(server.url).dbsize() == 0


def test_missing_password(enqueue: Callable[..., object], key_prefix: str) -> None:
    with redis_with_password("right-one") as server:
        location = f"redis://127.0.0.1:{server.port}/0"
        with (
            override_settings(TASKS=tasks_setting(location, key_prefix)),
            pytest.raises(
                BrokerUnavailable,
                match=(
                    rf"^Redis at {re.escape(location)} refused the credentials \(.+\)\. Put "
                    r"the right user and password in LOCATION"
                ),
            ),
        ):
            enqueue(echo, 1)
        assert redis.Redis.from_url(server.url).dbsize() == 0


def test_out_of_memory(enqueue: Callable[..., object], key_prefix: str) -> None:
    with (
        redis_process("--maxmemory-policy", "noeviction") as server,
        override_settings(TASKS=tasks_setting(server.url, key_prefix)),
    ):
        enqueue(echo, "fits")
        client = redis.Redis.from_url(server.url)
        before = sorted(client.keys("*"))
        client.config_set("maxmemory", 1)
        message = (
            rf"^Redis at {re.escape(server.url)} is out of memory \(.*command not allowed when "
            r"used memory > 'maxmemory'.*\)\. Raise maxmemory, or purge old results; nothing "
            r"was written\.$"
        )
        with pytest.raises(BrokerUnavailable, match=message):
            enqueue(echo, "known queue: the script alone")
        with pytest.raises(BrokerUnavailable, match=message):
            enqueue(echo.using(queue_name="emails"), "new queue: registered in the same pipeline")
        assert sorted(client.keys("*")) == before
