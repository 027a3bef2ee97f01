"""``manage.py threadmill_queue``: operator actions on the queues of a ThreadmillTaskBackend."""

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...backend import ThreadmillTaskBackend
from ...broker.damaged import DamagedRecord
from ...conf.settings import check_queue_name
from ...exceptions import BrokerUnavailable, ImproperlyConfiguredThreadmill
from ..backend_option import BACKEND_HELP, backend_option


def _when(record: DamagedRecord) -> str:
    if record.at_ms is None:
        return "unknown time"
    return datetime.fromtimestamp(record.at_ms / 1000, UTC).isoformat(timespec="seconds")


class Command(BaseCommand):
    help = (
        "Operator actions on the queues of a threadmill backend. 'damaged' lists the records "
        "the scripts set aside (docs/lifecycle.md, Damaged records); 'forget-damaged' drops "
        "entries of that list once you have fixed or deleted their keys."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", default="default", help=BACKEND_HELP)
        actions = parser.add_subparsers(
            dest="action",
            required=True,
            metavar="ACTION",
            help="damaged or forget-damaged; ACTION --help says more.",
        )
        listing = actions.add_parser(
            "damaged", help="List the records set aside, with when, by which script and why."
        )
        listing.add_argument(
            "queues", nargs="*", metavar="QUEUE", help="Queues to list (default: every queue)."
        )
        forget = actions.add_parser(
            "forget-damaged",
            help="Drop entries of a queue's damaged list; the keys themselves are left alone.",
        )
        forget.add_argument("queue", metavar="QUEUE", help="The queue whose list to change.")
        forget.add_argument("ids", nargs="*", metavar="ID", help="Task ids (or guard keys).")
        forget.add_argument("--all", action="store_true", help="Drop every entry of the queue.")

    def handle(self, *args: Any, **options: Any) -> None:
        backend = backend_option(options["backend"])
        try:
            if options["action"] == "damaged":
                self._list(backend, options["queues"])
            else:
                self._forget(backend, options["queue"], options["ids"], every=options["all"])
        except BrokerUnavailable as exc:
            raise CommandError(str(exc)) from exc

    def _queue(self, name: str) -> str:
        try:
            return check_queue_name(name)
        except ImproperlyConfiguredThreadmill as exc:
            raise CommandError(str(exc)) from exc

    def _list(self, backend: ThreadmillTaskBackend, queues: list[str]) -> None:
        names = [self._queue(q) for q in queues] or backend.broker.queues()
        found = [record for queue in names for record in backend.broker.damaged(queue)]
        if not found:
            self.stdout.write(f"No damaged records in {', '.join(names) or 'any queue'}.")
        for record in found:
            self.stdout.write(
                f"queue={record.queue} id={record.id} at={_when(record)} "
                f"script={record.script or '?'} reason={record.reason}"
            )

    def _forget(
        self, backend: ThreadmillTaskBackend, queue: str, ids: list[str], *, every: bool
    ) -> None:
        if every == bool(ids):
            raise CommandError(
                "Name the entries to drop (forget-damaged QUEUE ID ...) or pass --all, not both."
            )
        dropped = backend.broker.forget_damaged(self._queue(queue), None if every else ids)
        self.stdout.write(f"Forgot {dropped} damaged record(s) of queue {queue}.")
