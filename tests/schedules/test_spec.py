"""OPTIONS["schedules"]: shapes are read at the settings edge, with the fix in the error."""

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.schedules import Schedule
from django_threadmill.conf.settings import read_settings
from testproject.example.tasks import echo


def schedules(value: object) -> dict[str, Schedule]:
    return read_settings("default", {"OPTIONS": {"schedules": value}}).schedules


def test_cron_and_every_schedules_are_read() -> None:
    read = schedules(
        {
            "nightly": {"task": "app.tasks.report", "cron": "0 3 * * *", "kwargs": {"k": 1}},
            "ping": {"task": "app.tasks.ping", "every": timedelta(seconds=30), "args": (1,)},
            "fast": {"task": "app.tasks.ping", "every": 0.5, "priority": 5, "queue_name": "q"},
        }
    )
    assert read["nightly"] == Schedule(
        name="nightly", task="app.tasks.report", cron="0 3 * * *", kwargs={"k": 1}
    )
    assert (read["ping"].every_ms, read["ping"].args) == (30_000, [1])
    assert (read["fast"].every_ms, read["fast"].priority, read["fast"].queue_name) == (500, 5, "q")
    assert read["nightly"].when == "cron '0 3 * * *'"
    assert read["ping"].when == "every 0:00:30"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], r"OPTIONS\['schedules'\] is \[\]\. Use a dict of schedule name"),
        ({"a b": {}}, r"\['a b'\] has an unusable name\. Use 1-64 letters"),
        ({"a": "x"}, r"\['a'\] is 'x'\. Use a dict with keys among: task, cron"),
        (
            {"a": {"task": "x.y", "every": 1, "when": 3, "queue": "q"}},
            r"\['a'\] has 'queue', 'when', no key of a schedule\. Use keys among: task, cron",
        ),
        ({"a": {"every": 1}}, r"\['a'\] has no 'task'\. Give the dotted path of a @task"),
        ({"a": {"task": "x.y"}}, r"needs exactly one of 'cron' and 'every'"),
        ({"a": {"task": "x.y", "cron": "* * * * *", "every": 1}}, r"exactly one of"),
        ({"a": {"task": "x.y", "cron": 5}}, r"has cron=5\. Use a string such as '0 3 \* \* \*'"),
        ({"a": {"task": "x.y", "every": 0}}, r"has every=0\. Use a timedelta or a number of"),
        (  # positive, but below the 1 ms a schedule's slot is counted in
            {"a": {"task": "x.y", "every": timedelta(microseconds=500)}},
            r"every=datetime\.timedelta\(microseconds=500\)\. .* from 1 ms to 10 years\.",
        ),
        (  # a Task object, as a settings module that imports its tasks may give
            {"a": {"task": echo, "every": 1}},
            r"has the task testproject\.example\.tasks\.echo itself as 'task'\. Give its dotted "
            r"path: 'testproject\.example\.tasks\.echo'\.",
        ),
        ({"a": {"task": "x.y", "every": True}}, r"has every=True\."),
        ({"a": {"task": "x.y", "every": 1e300}}, r"has every=1e\+300\. .* to 10 years"),
        ({"a": {"task": 5, "every": 1}}, r"has task=5\. Give the dotted path of a @task as a str"),
        ({"a": {"task": "x.y", "every": float("nan")}}, r"has every=nan\."),
        ({"a": {"task": "x.y", "every": 1, "args": "abc"}}, r"has args='abc'\. Use a list of"),
        ({"a": {"task": "x.y", "every": 1, "kwargs": []}}, r"has kwargs=\[\]\. Use a dict of"),
        ({"a": {"task": "x.y", "every": 1, "queue_name": None}}, r"None\. Use a queue name"),
        ({"a": {"task": "x.y", "every": 1, "timezone": 1}}, r"has timezone=1\. Use a time zone"),
        (  # the type's repr, "Use a <class 'str'> there.", named no fix
            {"a": {"task": "x.y", "cron": "0 3 * * *", "timezone": ZoneInfo("Europe/Berlin")}},
            r"timezone=zoneinfo.ZoneInfo\(key='Europe/Berlin'\)\. Use a time zone's name \(a "
            r"str\) such as 'Europe/Berlin', not a tzinfo\.",
        ),
        ({"a": {"task": "x.y", "every": 1, "priority": "1"}}, r"has priority='1'\. Use a whole"),
        (
            {"a": {"task": "x.y", "cron": "0 3 * * *", "timezone": ""}},
            r"has timezone=''\. Name a zone such as 'Europe/Berlin', or leave 'timezone' out",
        ),
        (
            {"a": {"task": "x.y", "every": 60, "timezone": "Europe/Berlin"}},
            r"has timezone='Europe/Berlin' on an 'every' schedule\. Intervals run the same",
        ),
    ],
)
def test_bad_schedules_say_how_to_fix_them(value: object, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        schedules(value)
