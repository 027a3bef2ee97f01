"""Admin actions on tasks (requeue, cancel) and queues (purge), through the fenced backend API.

Each action is confirmed on its own page first. The backend's scripts check the state they
act on, so a task that changed meanwhile is left alone and the message says what it is now.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..broker.inspect import DAMAGED
from ..broker.inspect.source import Source
from ..codec.ids import named_short
from ..compat import TaskResultDoesNotExist, TaskResultStatus
from ..exceptions import BrokerUnavailable, StepOfCancelledWorkflow, UniqueKeyHeld
from ..retry import MAX_ATTEMPTS
from ..wording import backend_flag, listed_names
from .audit import admin_user
from .display import named, state_label

SELECTION_SEPARATOR = ":"  # "<alias>:<task id>": task ids never contain ":" (conf.py)
MAX_SELECTION = 500  # tasks one action may name: the confirmation page lists them all


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskAction:
    """One action on tasks: which state it applies to and the backend call that does it."""

    name: str
    label: str
    done: str  # past tense for the message, e.g. "requeued"
    applies_to: str  # the state the task must be in
    # That state as the pages name it: a cancel applies to delayed tasks too, and its pages
    # said it changed "only tasks that are READY".
    applies_to_label: str
    run: Callable[[ThreadmillTaskBackend, str, str], bool]  # (backend, task id, "ada in the admin")
    # Why a task in one of these states is left alone, and what to do, where "the task is <state>
    # now, not <applies_to_label>" would mislead: a reserved task reads "READY (reserved by a
    # worker)", and the message said it was READY now, not READY. ``{backend}`` stands for the
    # ``--backend`` of the commands it names.
    refused_in: Mapping[str, str] = field(default_factory=dict)


def _requeue(backend: ThreadmillTaskBackend, task_id: str, user: str) -> bool:
    return backend.requeue(task_id)


def _cancel(backend: ThreadmillTaskBackend, task_id: str, user: str) -> bool:
    return backend.cancel(task_id, reason=f"cancelled by {user}")


# Both scripts set a record whose key is not a hash aside and answer "damaged": the message
# said "the task is DAMAGED (not a hash) now, not FAILED", as if it had changed by itself, and not
# where it went or what to do (docs/lifecycle.md, Damaged records).
SET_ASIDE = (
    "its record's key holds something other than a hash, so the action set it aside as a "
    "damaged record, which never runs. The queues page lists it under Damaged records, as does "
    "manage.py threadmill_queue damaged QUEUE{backend}: look at the key with redis-cli (TYPE, "
    "DUMP), delete it or restore the record, then drop the entry with manage.py threadmill_queue "
    "forget-damaged QUEUE ID{backend} (docs/lifecycle.md, Damaged records)"
)

TASK_ACTIONS = {
    "requeue": TaskAction(
        name="requeue",
        label="Requeue selected FAILED tasks",
        done="requeued",
        applies_to="failed",
        applies_to_label="FAILED",
        run=_requeue,
        refused_in={DAMAGED: SET_ASIDE},
    ),
    "cancel": TaskAction(
        name="cancel",
        label="Cancel selected READY or delayed tasks",
        done="cancelled",
        applies_to="ready",
        applies_to_label="READY or delayed",
        run=_cancel,
        refused_in={
            "reserved": "a worker has taken the task (reserved, not started yet) and will run "
            "it: a cancel stops only a task no worker has taken. To keep it from running, pause "
            "its queue and stop that worker gracefully (it hands back the tasks it has not "
            "started), then cancel again (docs/lifecycle.md, Pausing a queue)",
            "running": "the task is RUNNING, and a cancel does not stop a running attempt "
            "(docs/lifecycle.md, Cancel, requeue, purge)",
            DAMAGED: SET_ASIDE,
        },
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Selected:
    """One task named by an action form, with the state it is in now ("" if it is gone)."""

    alias: str
    task_id: str
    state: str
    errors: int = 0  # failed attempts its record counts

    @property
    def value(self) -> str:
        return f"{self.alias}{SELECTION_SEPARATOR}{self.task_id}"

    @property
    def label(self) -> str:
        return state_label(self.state) if self.state else "gone"

    @property
    def named(self) -> str:
        """The task id as messages, log lines and the confirmation page name it: whole, as every
        id we make fits, or one posted by hand past SHOWN_ID_CHARS by its start and length."""
        return named_short(self.task_id)


def too_many_selected(action: TaskAction, count: int) -> str:
    """Return the message refusing an action on ``count`` posted tasks, past MAX_SELECTION."""
    return (
        f"Nothing was {action.done}: {count} tasks were selected, and one action names at most "
        f"{MAX_SELECTION}. Select fewer, or use “Go, on every task this filter matches”."
    )


def parse_selection(values: Iterable[str], sources: dict[str, Source]) -> list[tuple[str, str]]:
    """Return (alias, task id) pairs from posted values; unknown aliases are dropped."""
    pairs = []
    for value in values:
        alias, _, task_id = value.rpartition(SELECTION_SEPARATOR)
        if alias in sources and task_id and (alias, task_id) not in pairs:
            pairs.append((alias, task_id))
    return pairs


def current_states(pairs: list[tuple[str, str]], sources: dict[str, Source]) -> list[Selected]:
    """Read the state each selected task is in now: one pipeline per alias."""
    found: dict[tuple[str, str], Selected] = {}
    for alias in {alias for alias, _ in pairs}:
        ids = [task_id for a, task_id in pairs if a == alias]
        for task_id, row in sources[alias].inspector.rows(ids).items():
            if row is not None:
                found[(alias, task_id)] = Selected(
                    alias=alias, task_id=task_id, state=row.state, errors=row.errors
                )
    return [found.get((a, t), Selected(alias=a, task_id=t, state="")) for a, t in pairs]


def ran_every_attempt(state: str, errors: int) -> bool:
    """Whether a task is FAILED after its MAX_ATTEMPTS attempts (retry.py): requeue refuses
    it, changing nothing (docs/lifecycle.md, Retries)."""
    return state == "failed" and errors >= MAX_ATTEMPTS


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What an action did: how many tasks it changed, and those it left alone."""

    changed: int
    skipped: list[Selected]  # in another state than the action's, as they are now
    in_cancelled_workflows: list[Selected]  # steps a requeue refused: they would never run
    exhausted: list[Selected]  # FAILED tasks a requeue refused: they ran every attempt
    # Unique tasks a requeue refused, each with the equal task holding its key, unfinished.
    held: list[tuple[Selected, str]]
    # Redis failed midway: its error, and the tasks from the one it failed on to the last,
    # which the action did not settle (docs/admin.md, Actions and what they promise).
    interrupted: BrokerUnavailable | None = None
    unsettled: list[Selected] = field(default_factory=list)

    @property
    def left_alone(self) -> int:
        """How many tasks it did not change, for whatever reason."""
        refused = len(self.in_cancelled_workflows) + len(self.exhausted) + len(self.held)
        return len(self.skipped) + refused


def run_task_action(
    action: TaskAction,
    selected: list[Selected],
    sources: dict[str, Source],
    user: AbstractBaseUser | AnonymousUser,
) -> Outcome:
    """Apply ``action`` to each task; say how many it changed and which it left alone.

    Redis failing midway stops it there: what it did so far is returned with the error, for
    the audit line and the messages, where the error alone (a 503 page) hid the tasks already
    changed from both.
    """
    changed = 0
    skipped: list[Selected] = []
    in_cancelled: list[Selected] = []
    held: list[tuple[Selected, str]] = []
    who = admin_user(user)
    backends = {alias: threadmill_backend(alias) for alias in {item.alias for item in selected}}
    for n, item in enumerate(selected):
        try:
            ok = action.run(backends[item.alias], item.task_id, who)
        except BrokerUnavailable as exc:
            return Outcome(
                changed=changed,
                skipped=skipped,  # as selected: Redis cannot say what they are now
                in_cancelled_workflows=in_cancelled,
                exhausted=[],
                held=held,
                interrupted=exc,
                unsettled=selected[n:],
            )
        except TaskResultDoesNotExist:
            ok = False
        except StepOfCancelledWorkflow:
            in_cancelled.append(item)
            continue
        except UniqueKeyHeld as refused:
            held.append((item, refused.holder_id))
            continue
        if ok:
            changed += 1
        else:
            skipped.append(item)
    now = current_states([(s.alias, s.task_id) for s in skipped], sources)
    # FAILED now and refused by a requeue: not changed meanwhile, but out of attempts.
    exhausted = [
        s for s in now if s.state == action.applies_to and ran_every_attempt(s.state, s.errors)
    ]
    return Outcome(
        changed=changed,
        skipped=[s for s in now if s not in exhausted],
        in_cancelled_workflows=in_cancelled,
        exhausted=exhausted,
        held=held,
    )


def listed(items: list[Selected]) -> str:
    """Name the first MAX_LISTED_IDS tasks of ``items`` and count the others."""
    return listed_names([item.named for item in items])


def outcome_messages(action: TaskAction, outcome: Outcome) -> list[str]:
    """Return the messages after an action: the count, then what it left alone and why."""
    changed, skipped = outcome.changed, outcome.skipped
    noun = "task" if changed == 1 else "tasks"
    messages = [f"{changed} {noun} {action.done}."]
    for refused, why, where in (
        (
            outcome.in_cancelled_workflows,
            "a cancelled workflow's step, which no worker starts, so a requeue would only fail "
            "it again",
            "docs/workflows.md, Cancel",
        ),
        (
            outcome.exhausted,
            f"FAILED after {MAX_ATTEMPTS:,} attempts, the most a task runs, so a requeue would "
            "not run it again",
            "docs/lifecycle.md, Retries",
        ),
    ):
        if refused:
            ids = listed(refused)
            messages.append(
                f"{len(refused)} left alone: {why}; enqueue the task anew to run it ({where}): "
                f"{ids}."
            )
    if outcome.held:
        ids = listed_names([f"{item.named} (equal to {holder})" for item, holder in outcome.held])
        messages.append(
            f"{len(outcome.held)} left alone: an equal unique task has not finished, and the two "
            "would run at once; requeue it once that task has finished (docs/schedules.md, "
            f"Unique tasks): {ids}."
        )
    if outcome.interrupted is not None:  # Redis cannot say what the skipped ones are now
        if skipped:
            messages.append(
                f"{len(skipped)} left alone: not {action.applies_to_label} when the action came "
                f"to them: {listed(skipped)}."
            )
        return messages
    by_label: dict[tuple[str, str], list[Selected]] = {}
    for item in skipped:
        by_label.setdefault((item.label, item.alias), []).append(item)
    for (_, alias), items in sorted(by_label.items()):
        why = why_left_alone(action, items[0].state, alias)
        messages.append(f"{len(items)} left alone: {why}: {listed(items)}.")
    return messages


def why_left_alone(action: TaskAction, state: str, alias: str) -> str:
    """Return why ``action`` left alone a task of ``alias`` in ``state`` ("" for one gone) as it
    is now."""
    if not state:
        return "no such task any more (expired or purged)"
    if state in action.refused_in:
        return action.refused_in[state].format(backend=backend_flag(alias))
    return (
        f"the task is {state_label(state)} now, not {action.applies_to_label} (it changed "
        "meanwhile, or was never so)"
    )


def stopped_message(action: TaskAction, outcome: Outcome) -> str:
    """Return what an action Redis stopped midway did not settle, and what to do."""
    first, *rest = outcome.unsettled
    return (
        f"Stopped at {first.named}, which may or may not be {action.done}: "
        f"{outcome.interrupted} {len(rest)} more were not tried. Once Redis answers, run the "
        f"action again: it leaves alone the tasks already {action.done}."
    )


PURGE_STATES: dict[str, tuple[str, TaskResultStatus | None]] = {
    "": ("SUCCESSFUL and FAILED", None),
    "successful": ("SUCCESSFUL only", TaskResultStatus.SUCCESSFUL),
    "failed": ("FAILED only", TaskResultStatus.FAILED),
}


def unknown_purge_state(state: str) -> str:
    """Return the message refusing a purge of ``state``, which the purge form never sends."""
    known = " or ".join(named(value) for value in PURGE_STATES if value)
    return (
        f"Nothing was purged: the purge form sends state {known}, or nothing for both, not "
        f"{named(state)}. Choose which results to purge below and confirm again."
    )


@dataclass(frozen=True, slots=True)
class Purged:
    """What a purge deleted, and the error Redis stopped it with (None when it ended)."""

    deleted: int
    stopped: BrokerUnavailable | None


def purge(source: Source, queue: str, state: str) -> Purged:
    """Delete the finished results of one queue batch by batch (``Broker.purge_batches``, the
    path of the backend's ``purge_finished``); waiting and running tasks stay.

    Redis failing midway stops it with the count of those deleted, for the message and the
    audit line, where the error alone (a 503 page) hid them from both.
    """
    deleted = 0
    try:
        for removed in source.broker.purge_batches(queue, state=state):
            deleted += removed
    except BrokerUnavailable as exc:
        return Purged(deleted, exc)
    return Purged(deleted, None)


def purge_preview(source: Source, queue: str) -> dict[str, Any]:
    """Return what the purge confirmation page shows: how many results the queue holds, under
    every shard count, as the purge deletes them."""
    overview = source.inspector.overview([queue], every_count=True)[0]
    return {"finished": overview.finished, "outcomes": overview.outcomes}
