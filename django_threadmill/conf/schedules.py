"""Read ``OPTIONS["schedules"]`` into ``Schedule`` values; the system checks judge the rest.

This module checks shapes and types only. Whether a cron string parses, the task imports and is
bound to this backend, or the time zone exists, are system checks naming the schedule
(``schedules/checks.py``), so one bad schedule is reported at start with the others.
"""

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.utils.module_loading import import_string

from ..compat import InvalidTask, Task
from ..exceptions import ImproperlyConfiguredThreadmill
from ..wording import a_type
from .durations import seconds_of, whole_ms

# A schedule's name is part of a Redis key (its last-fired marker) and of its tasks' ids.
# Matched whole (fullmatch): a "$" would let a name ending in a line break by.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_EVERY_S = 3650 * 86400  # ten years: past Python's datetimes, far enough, slots overflow
KNOWN = ("task", "cron", "every", "args", "kwargs", "queue_name", "priority", "timezone")
# The type each optional key takes, and the fix its error gives.
EXPECTED: dict[str, tuple[type | tuple[type, ...], str]] = {
    "args": ((list, tuple), "Use a list of positional arguments, e.g. [7, 'daily']."),
    "kwargs": (dict, "Use a dict of keyword arguments, e.g. {'kind': 'daily'}."),
    "queue_name": (str, "Use a queue name (a str), or leave 'queue_name' out for the task's own."),
    "timezone": (str, "Use a time zone's name (a str) such as 'Europe/Berlin', not a tzinfo."),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """One periodic task: what to enqueue and when (exactly one of ``cron`` and ``every_ms``)."""

    name: str
    task: str  # dotted path of a @task
    cron: str | None = None
    every_ms: int | None = None  # slots are multiples of this since the Unix epoch
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    queue_name: str | None = None  # None: the task's own
    priority: int | None = None  # None: the task's own
    timezone: str | None = None  # for cron; None: settings.TIME_ZONE

    @property
    def when(self) -> str:
        """Describe when it fires, e.g. "cron '0 3 * * *'" or "every 30s"."""
        if self.cron is not None:
            return f"cron {self.cron!r}"
        return f"every {timedelta(milliseconds=self.every_ms or 0)}"


def _fail(name: str, problem: str, fix: str) -> ImproperlyConfiguredThreadmill:
    return ImproperlyConfiguredThreadmill(f"OPTIONS['schedules'][{name!r}] {problem}. {fix}")


def _every_ms(name: str, value: object) -> int:
    seconds = seconds_of(value)
    if seconds is None or not 0.001 <= seconds <= MAX_EVERY_S:
        raise _fail(
            name,
            f"has every={value!r}",
            "Use a timedelta or a number of seconds from 1 ms to 10 years.",
        )
    return whole_ms(seconds)


def _no_task_path(task: object) -> tuple[str, str]:
    """Say what a schedule's ``task`` that is no dotted path is, and the path to give: a Task
    object names its own (``module_path``)."""
    if task is None:
        return "has no 'task'", "Give the dotted path of a @task, e.g. 'app.tasks.x'."
    path = getattr(task, "module_path", None)
    if isinstance(path, str):
        return f"has the task {path} itself as 'task'", f"Give its dotted path: {path!r}."
    return f"has task={task!r}", "Give the dotted path of a @task as a string, e.g. 'app.tasks.x'."


def _known_keys(name: str, entry: object) -> dict[Any, Any]:
    """Return ``entry``, a dict of known keys only, or raise naming what is wrong with it."""
    if not isinstance(entry, dict):
        raise _fail(name, f"is {entry!r}", f"Use a dict with keys among: {', '.join(KNOWN)}.")
    unknown = sorted(set(entry) - set(KNOWN), key=repr)
    if unknown:
        raise _fail(
            name,
            f"has {', '.join(map(repr, unknown))}, no key of a schedule",
            f"Use keys among: {', '.join(KNOWN)}.",
        )
    return entry


def _schedule(name: object, entry: object) -> Schedule:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise _fail(str(name), "has an unusable name", "Use 1-64 letters, digits, '_', '.' or '-'.")
    entry = _known_keys(name, entry)
    task = entry.get("task")
    if not isinstance(task, str):
        raise _fail(name, *_no_task_path(task))
    if ("cron" in entry) == ("every" in entry):
        raise _fail(name, "needs exactly one of 'cron' and 'every'", "Give one, e.g. 'every'.")
    if "cron" in entry and not isinstance(entry["cron"], str):
        raise _fail(name, f"has cron={entry['cron']!r}", "Use a string such as '0 3 * * *'.")
    for key, (kind, fix) in EXPECTED.items():
        if key in entry and not isinstance(entry[key], kind):
            raise _fail(name, f"has {key}={entry[key]!r}", fix)
    if "timezone" in entry:
        _check_timezone(name, entry)
    priority = entry.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise _fail(name, f"has priority={priority!r}", "Use a whole number from -100 to 100.")
    return Schedule(
        name=name,
        task=entry["task"],
        cron=entry.get("cron"),
        every_ms=None if "every" not in entry else _every_ms(name, entry["every"]),
        args=list(entry.get("args", [])),
        kwargs=dict(entry.get("kwargs", {})),
        queue_name=entry.get("queue_name"),
        priority=priority,
        timezone=entry.get("timezone"),
    )


def _check_timezone(name: str, entry: dict[str, Any]) -> None:
    """Refuse a ``timezone`` that would be ignored: an empty one (it read as ``TIME_ZONE``), or
    one on an ``every`` schedule (intervals are the same in every zone)."""
    if "every" in entry:
        raise _fail(
            name,
            f"has timezone={entry['timezone']!r} on an 'every' schedule",
            "Intervals run the same in every zone: leave 'timezone' out, or use 'cron'.",
        )
    if not entry["timezone"]:
        raise _fail(
            name,
            "has timezone=''",
            "Name a zone such as 'Europe/Berlin', or leave 'timezone' out to use TIME_ZONE.",
        )


def read_schedules(value: object) -> dict[str, Schedule]:
    """Return ``OPTIONS["schedules"]`` as one ``Schedule`` per name, or raise with the fix."""
    if not isinstance(value, dict):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['schedules'] is {value!r}. Use a dict of schedule name to a dict such as "
            "{'task': 'app.tasks.report', 'cron': '0 3 * * *'}."
        )
    return {name: _schedule(name, entry) for name, entry in value.items()}


def scheduled_task(schedule: Schedule) -> Task:
    """Return the task ``schedule`` enqueues, with its queue and priority applied."""
    task = import_string(schedule.task)
    if not isinstance(task, Task):
        raise InvalidTask(
            f"{schedule.task!r} is {a_type(task)}, not a task. Only functions "
            "decorated with @task can be scheduled."
        )
    changes: dict[str, Any] = {"queue_name": schedule.queue_name, "priority": schedule.priority}
    return task.using(**{key: value for key, value in changes.items() if value is not None})


def bound_elsewhere(schedule: Schedule, task: Task, alias: str) -> str | None:
    """Say that ``task`` is bound to another backend than ``alias``, whose ``schedules`` name
    it, or None: the check (``threadmill.E011``), the listing and the scheduler say the same."""
    if task.backend == alias:
        return None
    return f"task {schedule.task!r} is bound to backend {task.backend!r}, not {alias!r}"
