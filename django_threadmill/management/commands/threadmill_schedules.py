"""manage.py threadmill_schedules: list a backend's schedules with their next and last slot.

Next slots are reckoned on Redis time, as the supervisors fire them (docs/design.md, One clock).
"""

from datetime import UTC, datetime, tzinfo
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ...aliases import source_of
from ...backend import ThreadmillTaskBackend
from ...conf.schedules import Schedule, scheduled_task
from ...exceptions import BrokerUnavailable
from ...schedules.checks import unfireable
from ...schedules.slots import ZONE_ERRORS, next_slot, zone_of
from ..backend_option import BACKEND_HELP, backend_option
from ..checks_at_start import SettingsRefusedPlainly
from ..ctrl_c import CtrlCSaid
from ..report_output import CutShortCommand
from ..set_up_frozen import SetUpFrozen


class Command(SetUpFrozen, CtrlCSaid, SettingsRefusedPlainly, CutShortCommand):
    help = (
        "List the schedules in OPTIONS['schedules'] of a threadmill backend: when each fires, "
        "its next slot (on the Redis clock), and the last slot any worker fired."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", default="default", help=BACKEND_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        backend = backend_option(options["backend"])
        schedules = backend.settings.schedules.values()
        if not schedules:
            self.stdout.write(f"No schedules in TASKS[{backend.alias!r}]['OPTIONS'].")
            return
        problems = {s.name: unfireable(s, backend.settings) for s in schedules}  # --skip-checks
        queues = {s.name: scheduled_task(s).queue_name for s in schedules if not problems[s.name]}
        try:
            now = backend.broker.server_time()
            paused = source_of(backend).inspector.paused(sorted(set(queues.values())))
            for schedule in schedules:
                problem = problems[schedule.name]
                if problem is not None:
                    self.stdout.write(_unfireable_line(schedule, problem))
                    continue
                queue = queues[schedule.name]
                self.stdout.write(self._line(backend, schedule, queue, now, queue in paused))
        except BrokerUnavailable as exc:
            raise CommandError(f"Cannot read the schedules' slots from Redis: {exc}") from exc

    def _line(
        self,
        backend: ThreadmillTaskBackend,
        schedule: Schedule,
        queue: str,
        now: datetime,
        paused: bool,
    ) -> str:
        zone = _shown_zone(schedule)
        last_ms = backend.broker.last_fired_ms(queue, schedule.name)
        last = "never" if last_ms is None else _when(last_ms, zone)
        # A last slot after now (the Redis clock stepped back since) holds back every slot up
        # to it: the enqueue script skips them (docs/schedules.md, Timing).
        after = max(now, last) if isinstance(last, datetime) else now
        upcoming = next_slot(schedule, after).astimezone(zone)
        # Its slots fire on and wait READY (docs/schedules.md, A paused queue).
        held = "  queue paused: its slots' tasks wait until it is resumed" if paused else ""
        return (
            f"{schedule.name}  {schedule.when} ({zone})  task={schedule.task}  "
            f"queue={queue}  next={upcoming.isoformat()}  "
            f"last={last if isinstance(last, str) else last.isoformat()}{held}"
        )


def _when(at_ms: int, zone: tzinfo) -> datetime | str:
    """Return the slot ``at_ms`` in ``zone``; "unknown time" for one written by hand that no
    datetime holds (past the year 9999, before year 1), as ``threadmill_queue`` reads a pause's."""
    try:
        return datetime.fromtimestamp(at_ms / 1000, zone)
    except (ValueError, OverflowError, OSError):
        return "unknown time"


def _unfireable_line(schedule: Schedule, problem: str) -> str:
    """Return the line of a schedule that can never fire, saying why (``unfireable``)."""
    return (
        f"{schedule.name}  {schedule.when}  task={schedule.task}  never fires: "
        f"{problem}. manage.py check names the fix."
    )


def _shown_zone(schedule: Schedule) -> tzinfo:
    """Return the zone to show the slots in: the schedule's, else TIME_ZONE; UTC for an every
    schedule whose zone would be the host's local time (TIME_ZONE None or "localtime": its slots
    are the same in every zone, and the host's time has no zone name), or that zoneinfo cannot
    load (a TIME_ZONE such as "America", which Django's own check lets by: the listing ended in
    zoneinfo's traceback). That UTC is Python's own, there on a host with no zone database,
    where zoneinfo loads no "UTC" either. A cron schedule's zone is then refused
    (threadmill.E010), and it is listed as never firing."""
    if schedule.cron is not None:
        return zone_of(schedule.timezone)
    try:
        return zone_of(None)  # an every schedule has no 'timezone' of its own
    except ZONE_ERRORS:
        return UTC
