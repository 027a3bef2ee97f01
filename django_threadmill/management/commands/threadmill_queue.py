"""``manage.py threadmill_queue``: operator actions on the queues of a ThreadmillTaskBackend."""

import getpass
import logging
import socket
from argparse import SUPPRESS, ArgumentParser, ArgumentTypeError
from collections import Counter
from copy import copy
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ...aliases import source_of
from ...broker import DEFAULT_PURGE_BATCH_SIZE, checked_batch_size
from ...broker.damaged import DamagedRecord
from ...broker.inspect.queues import STATE_SAMPLE
from ...broker.inspect.source import Source
from ...broker.layouts import QueueNames
from ...broker.pausing import MAX_REASON_CHARS, checked_reason
from ...broker.raw_replies import controls_escaped
from ...codec.ids import named_short
from ...codec.text import printable
from ...exceptions import BrokerUnavailable, ImproperlyConfiguredThreadmill, MaybeApplied
from ...wording import command_line, listed_names, listed_values, shown
from ..backend_option import BACKEND_HELP, backend_option
from ..checks_at_start import SettingsRefusedPlainly
from ..ctrl_c import CtrlCSaid
from ..failed_change import failed_change
from ..report_output import CutShortCommand, OutputClosed
from ..set_up_frozen import SetUpFrozen
from ..stop_held import HeldStop, Stopped, stops_held
from ..text_option import text_option

logger = logging.getLogger(__name__)

PURGE_STATES = ("successful", "failed")  # purge.lua's states; none given: both
PROGRESS_EVERY = 200  # purge batches between two progress lines: 100,000 results at 500 each


def _when(at_ms: int | None) -> str:
    """Return ``at_ms`` (Redis time) in ISO 8601, UTC; "unknown time" for none, and for a time
    written by hand past the year 9999, which no datetime holds."""
    if at_ms is None:
        return "unknown time"
    try:
        return datetime.fromtimestamp(at_ms / 1000, UTC).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):
        return "unknown time"


def _line(record: DamagedRecord) -> str:
    """Return one damaged record as ``damaged`` lists it (and ``forget-damaged --all``), on one
    line: what was written by hand has its control characters escaped (``\\x0a``), as
    ``forget-damaged`` takes an id."""
    return (
        f"queue={record.queue} id={controls_escaped(record.id)} at={_when(record.at_ms)} "
        f"script={controls_escaped(record.script) or '?'} reason={controls_escaped(record.reason)}"
    )


def _named(task_id: str) -> str:
    """Return an id given to ``forget-damaged`` as its messages and log line name it: cut short
    (``named_short``); an empty one (``"$ID"``, the variable unset) as ``''``, where it showed
    as nothing, and the log line said ``ids=all``, as for ``--all``."""
    return named_short(task_id) or "''"


def _said(error: BaseException) -> str:
    """Return ``error``'s message to go mid-sentence: without its closing full stop."""
    return str(error).rstrip(".")


def _stopped(alias: str, queue: str, forgot: int, why: BaseException) -> str:
    """Return what ``forget-damaged --all`` says when ``why`` stopped it midway."""
    match why:
        case OutputClosed():
            shown = "the output was closed, so the last of them may not show"
        case Stopped():
            shown = f"{why.name} came, and each one dropped is listed above"
        case KeyboardInterrupt():  # a second stop signal, which does not wait for Redis
            shown = "interrupted twice; a batch being dropped then may be dropped unlisted too"
        case MaybeApplied():  # Redis may have dropped the batch it did not answer for
            shown = (
                "those listed above; the next batch failed, and may have been dropped "
                f"unlisted: {_said(why)}"
            )
        case _:
            shown = f"those listed above; the next batch failed: {_said(why)}"
    return (
        f"Forgot {forgot} damaged record(s) of queue {queue}, then stopped: {shown}. The rest "
        f"are kept: '{_damaged_command(alias, queue)}' lists them."
    )


def _forgot_partly(alias: str, queue: str, forgot: list[str], why: BrokerUnavailable) -> str:
    """Return what ``forget-damaged`` with ids says when a part of the queue (a shard, of one
    shard count or another) failed after the parts before it dropped ``forgot``, naming them
    as the ids not found are named (``listed_names``): 10,000 filled the message."""
    listing = f"'{_damaged_command(alias, queue)}'"
    failed = (
        f"the next shard failed, and may have dropped its entries too: {_said(why)}. "
        f"{listing} lists those left."
        if isinstance(why, MaybeApplied)
        else f"the next shard failed: {_said(why)}. The others are kept: {listing} lists them."
    )
    named = listed_names([_named(task_id) for task_id in forgot])
    return (
        f"Forgot {len(forgot)} damaged record(s) of queue {queue} ({named}), then stopped: {failed}"
    )


def _again(alias: str, action: str, queue: str, otherwise: str) -> str:
    """Return how to see whether a pause or resume Redis may have applied: run it again, which
    changes nothing if it was (``otherwise``: what it then says)."""
    return (
        f"run '{command_line(alias, f'threadmill_queue {action} {queue}')}' again once Redis "
        f"answers: it {action}s the queue, or says it {otherwise}."
    )


def _interrupted(alias: str, action: str, queue: str) -> str:
    """Return what ``pause``, ``resume`` or ``forget-damaged`` with ids says when a second stop
    signal ended it while Redis had not answered: the change may have been made, and how to see
    whether it was."""
    match action:
        case "pause":
            see = _again(alias, action, queue, "was paused already")
        case "resume":
            see = _again(alias, action, queue, "was not paused")
        case _:
            see = _listing(alias, queue)
    return (
        "Interrupted twice, so the command stopped without waiting for Redis, which may have "
        f"made the change. To see whether it did, {see}"
    )


def _unread(names: QueueNames, asked: list[str]) -> str:
    """Say what a listing of ``asked`` (none: every queue) could not read, on a Redis Cluster
    node that does not answer, with its error: the queue set (every queue asked), and the
    queues with a part on such a node; "" when it read them all."""
    said = []
    for error, queues in names.unreached_by_node().items():
        unread = [queue for queue in queues if not asked or queue in asked]
        if error is names.unknown and not asked:
            said.append(
                "Damaged records listed in the queues in QUEUES alone, as the queue set could "
                f"not be read (a queue registered only in Redis is not listed): {error}"
            )
        if unread:
            said.append(
                f"Damaged records not read in {listed_names(unread)}, on a Redis Cluster node that "
                f"does not answer: {error}"
            )
    return "\n".join(said)


def _listing(alias: str, queue: str) -> str:
    """Return how to see which damaged entries of ``queue`` a failed forget left."""
    return f"list the entries left with '{_damaged_command(alias, queue)}'."


def _damaged_command(alias: str, queue: str) -> str:
    """Return the ``threadmill_queue damaged`` command line that lists ``queue``'s entries."""
    return command_line(alias, f"threadmill_queue damaged {queue}")


def _by() -> str:
    """Return who pauses or resumes, for the pause note and the log: user@host and how.

    A login name (``$LOGNAME``, the passwd entry) or host name that is not UTF-8 comes as lone
    surrogates, which Redis cannot be sent: each is kept as its escape (``\\udce9``).
    """
    host = socket.gethostname()
    try:
        who = f"{getpass.getuser()}@{host}"
    except (KeyError, OSError):  # no login name and no passwd entry, as in some containers
        who = host
    return f"{printable(who)} with manage.py threadmill_queue"


def _purge_command(alias: str, queue: str, state: str) -> str:
    """Return the ``threadmill_queue purge`` command line that purges what is left."""
    return command_line(
        alias, f"threadmill_queue purge {queue}" + (f" --state {state}" if state else "")
    )


def _results(state: str) -> str:
    """Return which results a purge of ``state`` deletes, as its messages name them."""
    return f"{state.upper()} results" if state else "finished results (SUCCESSFUL and FAILED)"


def _purge_stopped(why: BaseException) -> str:
    """Return why ``purge`` stopped before the end, as its message says it."""
    match why:
        case OutputClosed():
            return "the output was closed"
        case Stopped():
            return f"{why.name} came"
        case KeyboardInterrupt():  # a second stop signal, which does not wait for Redis
            return "interrupted twice; the batch being deleted then may be deleted too, uncounted"
        case MaybeApplied():  # Redis may have run the batch it did not answer for
            return f"the next batch failed, and may have deleted results uncounted: {_said(why)}"
        case _:
            return f"the next batch failed: {_said(why)}"


def _log_purge(alias: str, queue: str, state: str, deleted: int, *, complete: bool) -> None:
    """Log who purged what and how many, with the fields of the admin's purge line
    (docs/admin.md, Who did what), ``incomplete=yes`` when it stopped before the end."""
    logger.info(
        "Queue purged backend=%s queue=%s state=%s deleted=%d by=%s%s",
        controls_escaped(alias),
        controls_escaped(queue),
        state or "finished",
        deleted,
        _by(),
        "" if complete else " incomplete=yes",
    )


def _log_forget(alias: str, queue: str, ids: list[str], forgot: int, *, complete: bool) -> None:
    """Log who forgot which damaged entries (``ids``, none for ``--all``: the first
    MAX_LISTED_IDS, then how many more, each cut short past SHOWN_ID_CHARS as the admin's lines
    name ids) and how many, as the purge line is logged, ``incomplete=yes`` when it stopped
    before the end: the entry was the only pointer to the key set aside, which no index names."""
    logger.info(
        "Damaged records forgotten backend=%s queue=%s ids=%s forgot=%d by=%s%s",
        controls_escaped(alias),
        controls_escaped(queue),
        listed_values([controls_escaped(_named(task_id)) for task_id in ids]) if ids else "all",
        forgot,
        _by(),
        "" if complete else " incomplete=yes",
    )


def _batch_size(text: str) -> int:
    """Return a ``--batch-size``: a whole number from 1 to MAX_BATCH_SIZE (one script call)."""
    try:
        value: object = int(text)
    except ValueError:
        value = text  # not a number: checked_batch_size refuses it, naming the fix
    try:
        return checked_batch_size(value, shown(text))
    except ValueError as exc:
        raise ArgumentTypeError(str(exc)) from exc


class IntermixedParser(CommandParser):
    """An action's parser that takes its QUEUE and IDs between its options too.

    argparse reads a list of positionals (``damaged``'s queues, ``forget-damaged``'s ids) in one
    run: those after an option were refused as "unrecognized arguments: t2"
    (``forget-damaged emails t1 --backend other t2``), and ``forget-damaged emails --all t1``
    got that error instead of the one naming ids and --all together.
    """

    _intermixing = False  # Python 3.12's intermixed parse calls parse_known_args itself

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _takes_a_queue(action: ArgumentParser, verb: str) -> None:
    """Give ``action`` its QUEUE argument: one in QUEUES, or one Redis knows."""
    action.add_argument(
        "queue", metavar="QUEUE", help=f"The queue to {verb}: in QUEUES, or one Redis knows."
    )


def _reason(text: str) -> str:
    """Return a pause's ``--reason``: UTF-8 text on one line, as long as the admin keeps one
    (it is shown on one line there, and logged in a key=value line)."""
    try:
        return checked_reason(text_option(text), "--reason")
    except ValueError as exc:
        raise ArgumentTypeError(str(exc)) from exc


def _takes_command_options(command: ArgumentParser, action: ArgumentParser) -> None:
    """Let ``action`` take the command's own options too (``--backend``, ``-v``, ``--settings``).

    argparse hands everything after ACTION to the action's parser, which refused them
    (``pause emails --backend other``: "unrecognized arguments"). Taken there, they default to
    nothing, so a value given before ACTION stands.
    """
    for option in command._actions:  # argparse keeps them here; it has no public list
        if option.option_strings and option.dest not in ("help", "version"):
            taken = copy(option)
            taken.default = SUPPRESS
            action._add_action(taken)


class Command(SetUpFrozen, CtrlCSaid, SettingsRefusedPlainly, CutShortCommand):
    help = (
        "Operator actions on the queues of a threadmill backend. 'pause' stops the workers "
        "taking a queue's tasks and 'resume' lets them take them again (docs/lifecycle.md, "
        "Pausing a queue). 'damaged' lists the records the scripts set aside (docs/lifecycle.md, "
        "Damaged records); 'forget-damaged' drops entries of that list once you have fixed or "
        "deleted their keys. 'purge' deletes a queue's finished results, batch by batch "
        "(docs/lifecycle.md, Cancel, requeue, purge)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", default="default", help=BACKEND_HELP)
        actions = parser.add_subparsers(
            dest="action",
            required=True,
            parser_class=IntermixedParser,
            metavar="ACTION",
            help="pause, resume, damaged, forget-damaged or purge; ACTION --help says more.",
        )
        pause = actions.add_parser(
            "pause",
            help="Stop every worker taking the queue's tasks; running tasks finish and enqueue "
            "still accepts new ones. Kept across worker and Redis restarts until 'resume'.",
        )
        _takes_a_queue(pause, "pause")
        pause.add_argument(
            "--reason",
            type=_reason,
            default="",
            help=f"Why, shown with the pause in the admin and here: one line of at most "
            f"{MAX_REASON_CHARS} characters.",
        )
        resume = actions.add_parser(
            "resume", help="Let the workers take the queue's tasks again, waking idle ones now."
        )
        _takes_a_queue(resume, "resume")
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
        forget.add_argument(
            "ids",
            nargs="*",
            type=text_option,
            metavar="ID",
            help="Task ids (or guard keys), as 'damaged' lists them.",
        )
        forget.add_argument(
            "--all",
            action="store_true",
            help="Drop every entry of the queue, printing each one dropped.",
        )
        purge = self._purge_parser(actions)
        for action in (pause, resume, listing, forget, purge):
            _takes_command_options(parser, action)

    def _purge_parser(self, actions: Any) -> ArgumentParser:
        purge: ArgumentParser = actions.add_parser(
            "purge",
            help="Delete the queue's finished results (SUCCESSFUL, FAILED or both), a batch per "
            "Redis call; READY, delayed, reserved and running tasks are never touched. A "
            "Ctrl-C or SIGTERM stops it after the batch on its way, with the count deleted.",
        )
        _takes_a_queue(purge, "purge")
        purge.add_argument(
            "--state",
            choices=PURGE_STATES,
            default="",
            help="Delete only the results in this state (default: both).",
        )
        purge.add_argument(
            "--batch-size",
            type=_batch_size,
            default=DEFAULT_PURGE_BATCH_SIZE,
            help=f"Results looked at per Redis call; Redis serves no other client during one "
            f"(default: {DEFAULT_PURGE_BATCH_SIZE}).",
        )
        purge.add_argument(
            "--dry-run",
            action="store_true",
            help="Print how many finished results the queue holds, per state (estimated from "
            f"the newest {STATE_SAMPLE:,} above that, as the admin's purge page does), and "
            "delete nothing.",
        )
        return purge

    def handle(self, *args: Any, **options: Any) -> None:
        source = source_of(backend_option(options["backend"]))
        try:
            if options["action"] == "damaged":  # a read: Ctrl-C ends it where it is
                self._list(source, options["queues"])
                return
            if options["action"] == "purge" and options["dry_run"]:
                self._purge_dry_run(source, options["queue"], options["state"])
                return
            # A change: a stop signal waits until what it did is said (stop_held.py).
            with stops_held() as stop:
                self._change(source, stop, options)
            stop.check()
        except BrokerUnavailable as exc:
            raise CommandError(str(exc)) from exc
        except Stopped as exc:
            raise CommandError(
                f"Stopped on {exc.name}, which came while the command was at work: what it did "
                "is said above."
            ) from exc

    def _change(self, source: Source, stop: HeldStop, options: dict[str, Any]) -> None:
        """Make the change asked; a second stop signal (KeyboardInterrupt) that ended a pause,
        resume or forget with ids ends the command saying how to see what Redis did (purge and
        ``forget-damaged --all`` say it themselves)."""
        try:
            self._make_change(source, stop, options)
        except KeyboardInterrupt as exc:
            queue = named_short(options["queue"])
            raise CommandError(_interrupted(source.alias, options["action"], queue)) from exc

    def _make_change(self, source: Source, stop: HeldStop, options: dict[str, Any]) -> None:
        match options["action"]:
            case "pause":
                self._pause(source, options["queue"], options["reason"])
            case "resume":
                self._resume(source, options["queue"])
            case "purge":
                progress = options["verbosity"] > 0
                self._purge(
                    source,
                    stop,
                    options["queue"],
                    options["state"],
                    options["batch_size"],
                    progress=progress,
                )
            case _:
                self._forget(source, options["queue"], options["ids"], stop, every=options["all"])

    def _queue(self, source: Source, name: str) -> str:
        """Return ``name`` if the backend has that queue: in QUEUES, or one Redis knows
        (the admin's rule), so a queue renamed in the settings can still be handled."""
        try:
            return source.known_queue(name)
        except ImproperlyConfiguredThreadmill as exc:
            raise CommandError(str(exc)) from exc

    def _pause(self, source: Source, name: str, reason: str) -> None:
        queue = self._queue(source, name)
        where = f"queue {queue} of backend {source.alias}"
        try:
            paused = source.broker.pause(queue, _by(), reason)
        except BrokerUnavailable as exc:
            raise failed_change(
                exc, _again(source.alias, "pause", queue, "was paused already")
            ) from exc
        if paused:
            self.stdout.write(
                f"Paused {where}: workers take none of its tasks until "
                f"'{command_line(source.alias, f'threadmill_queue resume {queue}')}'. Tasks a "
                "worker holds already (running, or reserved in its buffer) still run; enqueue "
                "still accepts new ones."
            )
            return
        pause = source.inspector.paused([queue]).get(queue)
        by = pause and controls_escaped(pause.by)
        since = "" if pause is None else f" since {_when(pause.at_ms)} by {by or '?'}"
        why = f" ({controls_escaped(pause.reason)})" if pause and pause.reason else ""
        self.stdout.write(f"The {where} was paused already{since}{why}; nothing changed.")

    def _resume(self, source: Source, name: str) -> None:
        queue = self._queue(source, name)
        where = f"queue {queue} of backend {source.alias}"
        try:
            resumed = source.broker.resume(queue, _by())
        except BrokerUnavailable as exc:
            raise failed_change(
                exc, _again(source.alias, "resume", queue, "was not paused")
            ) from exc
        if resumed:
            self.stdout.write(f"Resumed {where}: idle workers were woken to take its tasks.")
        else:
            self.stdout.write(f"The {where} was not paused; nothing changed.")

    def _list(self, source: Source, queues: list[str]) -> None:
        """List the damaged records of ``queues`` (none: every queue), those on a Redis Cluster
        node that answers; then raise naming what was not read (``Source.names``)."""
        # Each queue once: one named twice would be read twice, its records listed twice.
        asked = list(dict.fromkeys(self._queue(source, q) for q in queues))
        names = source.names
        listing = asked or names.queues
        read = [queue for queue in listing if queue not in names.unreached]
        broker = source.broker
        every = source.inspector.parts_to_sum(read, every_count=True)
        found = broker.damaged(read, every)
        if not found and (read or not listing):
            self.stdout.write(f"No damaged records in {listed_names(read) or 'any queue'}.")
        for record in found:
            self.stdout.write(_line(record))
        listed = Counter(record.queue for record in found)
        for queue, count in broker.damaged_counts(read, every).items():
            if count > listed[queue]:  # a listing reads a bounded number per queue part
                self.stdout.write(
                    f"queue={queue}: {count - listed[queue]:,} more damaged record(s) not listed "
                    f"(at most {broker.MAX_LISTED:,} are read per queue or shard); "
                    "forget the ones listed once fixed, then list again."
                )
        if unread := _unread(names, asked):
            raise CommandError(unread)

    def _forget(
        self, source: Source, name: str, ids: list[str], stop: HeldStop, *, every: bool
    ) -> None:
        if every and ids:
            raise CommandError(
                "Name the entries to drop (forget-damaged QUEUE ID ...) or pass --all, not both."
            )
        if not every and not ids:
            raise CommandError(
                "Name the entries to drop (forget-damaged QUEUE ID ...), or pass --all to drop "
                "every one."
            )
        queue = self._queue(source, name)
        if every:
            self._forget_all(source, queue, stop)
            return
        ids = list(dict.fromkeys(ids))  # given twice, an id was dropped once, then "missing"
        dropped: dict[str, None] = {}  # in the order dropped; an id may sit in two shard counts
        complete = False
        try:
            for part in source.broker.forget_damaged(queue, ids):
                dropped.update(dict.fromkeys(part))
            complete = True
        except BrokerUnavailable as exc:
            if not dropped:
                raise failed_change(exc, _listing(source.alias, queue)) from exc
            raise CommandError(_forgot_partly(source.alias, queue, list(dropped), exc)) from exc
        finally:  # a second stop signal included: what was dropped is logged
            _log_forget(source.alias, queue, ids, len(dropped), complete=complete)
        missing = [task_id for task_id in ids if task_id not in dropped]
        forgot = f"Forgot {len(dropped)} damaged record(s) of queue {queue}"
        if missing:  # a typo, or an id forgotten already: say which (cut short, the first
            # MAX_LISTED_IDS, as the admin lists ids: thousands given filled the message)
            named = listed_names([_named(task_id) for task_id in missing])
            raise CommandError(
                f"{forgot}; not in its damaged list: {named}. Give each id as "
                f"'{_damaged_command(source.alias, queue)}' lists it."
            )
        self.stdout.write(f"{forgot}.")

    def _forget_all(self, source: Source, queue: str, stop: HeldStop) -> None:
        """Drop every entry of ``queue``'s list, and list exactly the ones dropped: each batch
        is read and dropped in one step (one set aside since the operator's last listing is
        shown too), and listed before the next is dropped, so a stop midway (Redis failing,
        the output closed) drops no more than was listed, but for that batch. A stop signal
        is held until the batch on its way is listed, so it ends the command with each entry
        dropped listed."""
        forgot, complete = 0, False
        try:
            for batch in source.broker.forget_all_damaged(queue):
                forgot += len(batch)
                for record in batch:
                    self.stdout.write(_line(record))
                stop.check()
            complete = True
        except (BrokerUnavailable, OutputClosed, Stopped, KeyboardInterrupt) as exc:
            if not forgot and isinstance(exc, BrokerUnavailable):
                raise failed_change(exc, _listing(source.alias, queue)) from exc
            raise CommandError(_stopped(source.alias, queue, forgot, exc)) from exc
        finally:
            _log_forget(source.alias, queue, [], forgot, complete=complete)
        what = "those listed above, read and dropped in one step" if forgot else "it had none"
        self.stdout.write(f"Forgot {forgot} damaged record(s) of queue {queue}: {what}.")

    def _purge(
        self,
        source: Source,
        stop: HeldStop,
        name: str,
        state: str,
        batch_size: int,
        *,
        progress: bool,
    ) -> None:
        """Delete ``name``'s finished results batch by batch (``Broker.purge_batches``, the
        path of ``purge_finished``), printing progress, and log it as the admin's purge is.

        A stop signal is held until the batch on its way is counted; the command then ends
        with the count deleted, and a rerun purges the rest. So does Redis failing or the
        output closing midway. A purge taken in one HTTP request by the admin could outlast a
        web server's timeout and stop without a word (docs/lifecycle.md, Cancel, requeue, purge).
        """
        queue = self._queue(source, name)
        what = f"{_results(state)} from queue {queue} of backend {source.alias}"
        rerun = _purge_command(source.alias, queue, state)
        deleted = 0
        try:
            batches = source.broker.purge_batches(queue, state=state, batch_size=batch_size)
            for done, removed in enumerate(batches, 1):
                deleted += removed
                if progress and done % PROGRESS_EVERY == 0:
                    self.stdout.write(f"Purging queue {queue}: {deleted} deleted so far.")
                stop.check()
        except (BrokerUnavailable, OutputClosed, Stopped, KeyboardInterrupt) as exc:
            _log_purge(source.alias, queue, state, deleted, complete=False)
            if not deleted and isinstance(exc, BrokerUnavailable):
                raise failed_change(exc, f"run '{rerun}' again: it purges what is left.") from exc
            raise CommandError(
                f"Purged {deleted} {what}, then stopped: {_purge_stopped(exc)}. Those left are "
                f"kept: run '{rerun}' again to purge them."
            ) from exc
        _log_purge(source.alias, queue, state, deleted, complete=True)
        self.stdout.write(f"Purged {deleted} {what}; waiting and running tasks were left alone.")

    def _purge_dry_run(self, source: Source, name: str, state: str) -> None:
        """Print what the admin's purge page shows (the queue's finished results, split by
        state), and what a purge of ``state`` would delete; change nothing."""
        queue = self._queue(source, name)
        overview = source.inspector.overview([queue], every_count=True)[0]  # as the purge reaches
        split = {wanted: overview.outcomes.counts.get(wanted, 0) for wanted in PURGE_STATES}
        exact = overview.outcomes.exact
        about, estimated = (
            ("", "") if exact else ("about ", f" (estimated from the newest {STATE_SAMPLE:,})")
        )
        would = split[state] if state else sum(split.values())
        self.stdout.write(
            f"Dry run, nothing deleted: queue {queue} of backend {source.alias} holds "
            f"{overview.finished} finished results: {about}{split['successful']} SUCCESSFUL, "
            f"{split['failed']} FAILED{estimated}. '{_purge_command(source.alias, queue, state)}' "
            f"would delete {'at most ' if exact else about}{would}."
        )
