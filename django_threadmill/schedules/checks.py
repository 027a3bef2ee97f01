"""System checks of ``OPTIONS["schedules"]``: each problem is an error naming its schedule."""

from collections.abc import Set
from datetime import UTC, datetime

from django.conf import settings as django_settings
from django.core.checks import CheckMessage, Error, Warning

from ..codec.calls import call_misfit
from ..codec.jsoncodec import dumps, refuse_key_clash
from ..codec.payloads import encode_payload
from ..compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY, InvalidTask, normalize_json
from ..conf.schedules import Schedule, bound_elsewhere, scheduled_task
from ..conf.settings import BackendSettings
from ..enqueue.prepare import check_keyword_names, check_payload_size
from ..wording import listed_names
from .slots import ZONE_ERRORS, NoTimeZone, next_slot, zone_of

BAD_TIMING = "threadmill.E010"  # the cron string does not parse, or its time zone is not known
BAD_TASK = "threadmill.E011"  # the task does not import, is no task, or is not bound here
UNKNOWN_QUEUE = "threadmill.E012"  # queue_name is not in the backend's QUEUES
BAD_ARGUMENTS = "threadmill.E014"  # args or kwargs would fail every slot's enqueue or call
TOO_LARGE = "threadmill.E016"  # args and kwargs make a payload above max_payload_bytes
UNIQUE_SCHEDULED = "threadmill.W007"  # the task is unique, which a slot's enqueue does not claim

# What each field takes, named after cronsim's refusal of it ("Bad minute"), which says which
# field but not why: "*/0 * * * *", "60 * * * *" and "0 0 31 2 *" all read "Bad ...".
CRON_FIELD_VALUES = {
    "minute": "0-59",
    "hour": "0-23",
    "day-of-month": "1-31, L or LW, on a day one of its months has",
    "month": "1-12 or JAN-DEC",
    "day-of-week": "0-7 (0 and 7 are Sunday) or SUN-SAT, 5L (the last Friday), 1#2 (the second "
    "Monday)",
}


def _timing_error(schedule: Schedule) -> str | None:
    if schedule.cron is None:  # every N since the epoch: the same in every zone
        return None
    try:
        zone_of(schedule.timezone)
    except NoTimeZone as exc:
        return str(exc)
    except ZONE_ERRORS as exc:
        return f"{_zone_named(schedule)} is unknown ({exc})"
    try:
        next_slot(schedule, datetime.now(UTC))
    except ImportError as exc:
        return str(exc).rstrip(".")  # a sentence of its own, ended where it is quoted
    except Exception as exc:  # cronsim raises its own CronSimError
        field = str(exc).removeprefix("Bad ")
        values = CRON_FIELD_VALUES.get(field)
        takes = (
            f"; its {field} takes {values}, as one value, a list (1,5), a range (1-5, not 5-1) "
            "or a step of 1 or more (*/15, 0-30/10)"
            if values
            else ""
        )
        return f"cron {schedule.cron!r} does not parse ({exc}){takes}"
    return None


def _zone_named(schedule: Schedule) -> str:
    """Name the zone a cron schedule follows, and where it is set: its own 'timezone', else
    Django's TIME_ZONE, which a schedule without one follows (a typo there, such as
    'America', passes Django's own check when a directory of that name holds zones)."""
    if schedule.timezone:
        return f"time zone {schedule.timezone!r}"
    return f"it sets no 'timezone', and TIME_ZONE {django_settings.TIME_ZONE!r}"


def unfireable(schedule: Schedule, settings: BackendSettings) -> str | None:
    """Say why ``schedule`` can never fire, by its timing, its task or its arguments (each
    slot's enqueue would refuse them), or None: what ``threadmill.E010``, ``E011``, ``E014``
    and ``E016`` report, for a command run with ``--skip-checks``."""
    return (
        _timing_error(schedule)
        or _task_error(schedule, settings.alias)
        or _arguments_error(schedule)
        or _size_error(schedule, settings.max_payload_bytes)
    )


def _task_error(schedule: Schedule, alias: str) -> str | None:
    try:
        task = scheduled_task(schedule)
    except ImportError as exc:
        return f"task {schedule.task!r} does not import ({exc})"
    except (InvalidTask, ValueError, TypeError) as exc:
        return f"task {schedule.task!r} cannot be scheduled ({exc})"
    except (Exception, SystemExit) as exc:  # its module raised as it ran: reported, not raised
        raised = f"{type(exc).__name__}: {exc}"
        return f"task {schedule.task!r} does not import (its module raised {raised})"
    # using() above already ran the task's own backend's validate_task (queue, priority).
    return bound_elsewhere(schedule, task, alias)


def _arguments_error(schedule: Schedule) -> str | None:
    """Say why args and kwargs would fail an enqueue (each slot would): a keyword name that is
    no str, by the enqueue's own rule, or arguments that do not encode as a payload does."""
    try:
        check_keyword_names(schedule.task, schedule.kwargs)
    except TypeError as exc:
        return f"kwargs would fail every slot ({str(exc).rstrip('.')})"
    try:
        given = {"args": schedule.args, "kwargs": schedule.kwargs}
        arguments = normalize_json(given)
        refuse_key_clash(given)
        dumps(arguments)
    except (TypeError, ValueError) as exc:
        return f"args or kwargs are not JSON ({exc})"
    except RecursionError:
        return (
            "args or kwargs are nested too deeply to store as JSON; flatten them, or store "
            "the data elsewhere and give its key"
        )
    return None


def _call_error(schedule: Schedule) -> str | None:
    """Say why the task's function cannot be called with ``args`` and ``kwargs``: each slot's
    task would fail as it ran, with Python's TypeError, the next night rather than at deploy."""
    misfit = call_misfit(scheduled_task(schedule), schedule.args, schedule.kwargs)
    return misfit and f"task {schedule.task!r} cannot take its args and kwargs ({misfit})"


def _size_error(schedule: Schedule, max_payload_bytes: int) -> str | None:
    """Say that a slot's payload, encoded as its enqueue encodes it, is above
    ``max_payload_bytes``: each slot's enqueue would refuse it, by the enqueue's own rule."""
    task = scheduled_task(schedule)
    args = [normalize_json(value) for value in schedule.args]  # as TaskResult stores them
    kwargs = {name: normalize_json(value) for name, value in schedule.kwargs.items()}
    payload = encode_payload(task, args, kwargs, None, given=(schedule.args, schedule.kwargs))
    try:
        check_payload_size(task.module_path, payload, max_payload_bytes)
    except ValueError as exc:
        return f"args and kwargs would fail every slot ({str(exc).rstrip('.')})"
    return None


def _queue_error(schedule: Schedule, queues: Set[str]) -> str | None:
    """Say that ``queue_name`` is not in QUEUES (an empty QUEUES takes any)."""
    if schedule.queue_name is None or not queues or schedule.queue_name in queues:
        return None
    return (
        f"queue_name {schedule.queue_name!r} is not in QUEUES ({listed_names(sorted(queues))}), "
        "so no task can be enqueued to it"
    )


def schedule_messages(settings: BackendSettings, queues: Set[str]) -> list[CheckMessage]:
    """Return one error per problem of each schedule's timing, arguments, queue or task."""
    alias = settings.alias
    messages: list[CheckMessage] = []
    for schedule in settings.schedules.values():
        where = f"TASKS[{alias!r}]['OPTIONS']['schedules'][{schedule.name!r}]"
        timing = _timing_error(schedule)
        if timing:
            messages.append(
                Error(
                    f"{where}: {timing}.",
                    hint="Use five cron fields such as '0 3 * * *' and an IANA time zone name "
                    "such as 'Europe/Berlin' (the schedule's 'timezone', else TIME_ZONE); "
                    "install django-threadmill[cron] for cron.",
                    id=BAD_TIMING,
                )
            )
        arguments = _arguments_error(schedule)
        if arguments:
            messages.append(
                Error(
                    f"{where}: {arguments}.",
                    hint="Use strings, numbers, booleans, None, lists and dicts in 'args' and "
                    "'kwargs', and name each keyword argument in 'kwargs' by a str.",
                    id=BAD_ARGUMENTS,
                )
            )
        queue = _queue_error(schedule, queues)
        if queue:
            messages.append(
                Error(
                    f"{where}: {queue}.",
                    hint=f"Fix the queue name, or add the queue to TASKS[{alias!r}]['QUEUES'].",
                    id=UNKNOWN_QUEUE,
                )
            )
            continue  # the task cannot be rebuilt for that queue: one error says why
        messages += _task_messages(schedule, settings, where, check_call=not arguments)
    return messages


def _task_hint(schedule: Schedule, alias: str) -> str:
    """Return the fix of a schedule whose task cannot be scheduled: its ``priority``, which the
    task's ``using()`` judges too, when that is out of range; else the task it names."""
    priority = schedule.priority
    if priority is not None and not TASK_MIN_PRIORITY <= priority <= TASK_MAX_PRIORITY:
        return (
            f"Give the schedule's 'priority' a whole number from {TASK_MIN_PRIORITY} to "
            f"{TASK_MAX_PRIORITY}, or leave it out for the task's own."
        )
    return (
        f"Point 'task' at a @task bound to backend {alias!r} (its backend= argument), e.g. "
        "'myapp.tasks.report'."
    )


def _task_messages(
    schedule: Schedule, settings: BackendSettings, where: str, *, check_call: bool
) -> list[CheckMessage]:
    """Return the errors of the schedule's task: it cannot be scheduled here, or (when its
    arguments encode, ``check_call``) a slot's call of it would fail; and the warning of a
    unique task."""
    alias = settings.alias
    problem = _task_error(schedule, alias)
    if problem:
        return [Error(f"{where}: {problem}.", hint=_task_hint(schedule, alias), id=BAD_TASK)]
    messages = _call_messages(schedule, settings, where) if check_call else []
    if getattr(scheduled_task(schedule), "unique_for", None) is not None:
        messages.append(
            Warning(
                f"{where}: its task is unique (unique_for), but a slot's enqueue does not "
                "claim the unique key: each slot is a task of its own, so a run still going "
                "when the next slot comes runs beside it, and an equal enqueue made "
                "meanwhile is stored too.",
                hint="Make the task skip work another run is doing (a lock, a database "
                "row), or give the schedule an interval longer than a run.",
                id=UNIQUE_SCHEDULED,
            )
        )
    return messages


def _call_messages(schedule: Schedule, settings: BackendSettings, where: str) -> list[CheckMessage]:
    """Return the errors of a slot's call of the schedule's task: its function cannot take the
    arguments, or their payload is above ``max_payload_bytes``."""
    messages: list[CheckMessage] = []
    misfit = _call_error(schedule)
    if misfit:
        messages.append(
            Error(
                f"{where}: {misfit}.",
                hint="Give 'args' and 'kwargs' the parameters the task's function takes "
                "(after its context, if it takes one).",
                id=BAD_ARGUMENTS,
            )
        )
    too_large = _size_error(schedule, settings.max_payload_bytes)
    if too_large:
        messages.append(
            Error(
                f"{where}: {too_large}.",
                hint="Keep large data out of the schedule: store it elsewhere (a file or a "
                "model) and give 'args' or 'kwargs' its key, or raise "
                f"TASKS[{settings.alias!r}]['OPTIONS']['max_payload_bytes'].",
                id=TOO_LARGE,
            )
        )
    return messages
