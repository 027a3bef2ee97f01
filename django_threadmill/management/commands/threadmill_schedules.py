"""manage.py threadmill_schedules: list a backend's schedules with their next and last slot.

Next slots are reckoned on Redis time, as the supervisors fire them (docs/design.md, One clock).
"""

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from ...backend import ThreadmillTaskBackend
from ...conf.schedules import Schedule, scheduled_task
from ...exceptions import BrokerUnavailable
from ...schedules.checks import unfireable
from ...schedules.slots import next_slot, zone_of
from ..backend_option import BACKEND_HELP, backend_option
from ..checks_at_start import SettingsRefusedPlainly
from ..report_output import CutShortCommand


class Command(SettingsRefusedPlainly, CutShortCommand):
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
        try:
            now = backend.broker.server_time()
            for schedule in schedules:
                self.stdout.write(self._line(backend, schedule, now))
        except BrokerUnavailable as exc:
            raise CommandError(f"Cannot read the schedules' slots from Redis: {exc}") from exc

    def _line(self, backend: ThreadmillTaskBackend, schedule: Schedule, now: datetime) -> str:
        problem = unfireable(schedule, backend.alias)  # let through by --skip-checks
        if problem is not None:
            return (
                f"{schedule.name}  {schedule.when}  task={schedule.task}  never fires: "
                f"{problem}. manage.py check names the fix."
            )
        zone = _shown_zone(schedule)
        queue = scheduled_task(schedule).queue_name
        last_ms = backend.broker.last_fired_ms(queue, schedule.name)
        upcoming = next_slot(schedule, now).astimezone(zone)
        last = "never" if last_ms is None else datetime.fromtimestamp(last_ms / 1000, zone)
        return (
            f"{schedule.name}  {schedule.when} ({zone.key})  task={schedule.task}  "
            f"queue={queue}  next={upcoming.isoformat()}  "
            f"last={last if isinstance(last, str) else last.isoformat()}"
        )


def _shown_zone(schedule: Schedule) -> ZoneInfo:
    """Return the zone to show the slots in: the schedule's, else TIME_ZONE; UTC for an every
    schedule under TIME_ZONE = None (its slots are the same in every zone, and the host's local
    time has no zone name). A cron schedule then has none: zone_of says so (threadmill.E010)."""
    if schedule.cron is None and not settings.TIME_ZONE:
        return ZoneInfo("UTC")
    return zone_of(schedule.timezone)
