"""The enqueue pipeline of one ``TASKS`` entry: prepare, store (coalesced), announce, read back.

``ThreadmillTaskBackend`` is a thin django.tasks face over this, as Django's ``RedisCache`` is
over its client; the scheduler enqueues through it too. One pipeline serves every thread and
event loop of a process (``pipeline_for``).
"""

import os
import reprlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from threading import Lock
from typing import Any

from ..broker import Broker, Guard, NewTask
from ..broker.reads import damaged_fields, unreadable_payload
from ..codec.attempts_here import as_started_here
from ..codec.ids import queue_of, shown_id
from ..codec.payloads import decode_payload, load_task
from ..codec.results import record_problem, stored_result
from ..compat import Task, TaskResult, TaskResultDoesNotExist
from ..conf.settings import BackendSettings
from ..exceptions import MaybeApplied, PartlyEnqueued, PayloadError, UnstorableArguments
from ..wording import a_type
from .announce import announce_all, announce_guarded, announcer
from .batching import maybe_stored
from .coalesce import Enqueuer
from .on_commit import (
    defer_to_commit,
    duplicate_held,
    held_at_commit,
    held_for_commit,
    note_duplicates,
    stored_at_commit,
)
from .prepare import encode_call, prepare, unique_call

type Call = tuple[Sequence[Any], dict[str, Any]]
# Sends task_enqueued for the stored results of a write (announce.py): raising a receiver's
# error to the caller, or logging it where no caller can act on it.
type Announcer = Callable[[type, list[TaskResult]], None]

# Stores of one unique call whose holder was gone when its result was read back (it finished
# and expired meanwhile): each try met a holder the one before did not, so 3 is plenty.
READ_BACK_TRIES = 3


def is_call(args: object, kwargs: object) -> bool:
    """Tell whether ``args`` is a tuple or list and ``kwargs`` a dict: a str given as args
    would be stored as its letters, one argument each, and a dict as its keys."""
    return isinstance(args, tuple | list) and isinstance(kwargs, dict)


def checked_call(args: object, kwargs: object) -> Call:
    """Return the arguments of ``enqueue(task, args, kwargs)``, or raise naming the fix."""
    if is_call(args, kwargs):
        return args, kwargs  # type: ignore[return-value]
    raise TypeError(
        f"enqueue() takes args as a tuple or list and kwargs as a dict; it was given "
        f"args={reprlib.repr(args)}, {a_type(args)}, and kwargs={reprlib.repr(kwargs)}, "
        f"{a_type(kwargs)}. Pass e.g. backend.enqueue(task, (1, 2), {{'c': 3}}), or call "
        "task.enqueue(1, 2, c=3)."
    )


def call_of(number: int, item: object) -> Call:
    """Return one item of ``enqueue_many`` as ``(args, kwargs)``, or raise naming that shape:
    a tuple of one string would otherwise be unpacked into its letters."""
    if isinstance(item, tuple | list) and len(item) == 2:
        args, kwargs = item
        if is_call(args, kwargs):
            return args, kwargs
    raise TypeError(
        "enqueue_many() takes (args, kwargs) pairs, such as ((1, 2), {'c': 3}); call "
        f"{number} is {reprlib.repr(item)}. Give args as a tuple or list and kwargs as a dict, "
        "empty when there are none."
    )


def calls_of(calls: object) -> list[Call]:
    """Return the ``(args, kwargs)`` pairs of ``enqueue_many``, or raise naming that shape:
    Python's own error for ``None`` ("'NoneType' object is not iterable") named no fix."""
    try:
        items = iter(calls)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(
            "enqueue_many() takes an iterable of (args, kwargs) pairs, such as "
            f"[((1, 2), {{'c': 3}})]; it was given {reprlib.repr(calls)}, {a_type(calls)}. Pass "
            "a list with one pair per call."
        ) from None
    return [call_of(number, item) for number, item in enumerate(items)]


def no_such_result(result_id: str) -> TaskResultDoesNotExist:
    """The error for ``result_id``, whose task has no record: one enqueued with
    ``enqueue_on_commit`` whose write waits for this thread's commit says so, else it would
    read as expired or unknown (docs/enqueue.md, Enqueue after commit); so does a unique one
    whose write found an equal task holding the key at the commit (docs/schedules.md, Unique
    tasks)."""
    if held_for_commit(result_id):
        return TaskResultDoesNotExist(
            stored_at_commit(f"Task {shown_id(result_id)}", "enqueued", "read")
        )
    if (holder := duplicate_held(result_id)) is not None:
        return TaskResultDoesNotExist(held_at_commit(shown_id(result_id), shown_id(holder)))
    return TaskResultDoesNotExist(result_id)


def _refusal(task: Task, number: int, total: int) -> str:
    """Say that call ``number`` of an ``enqueue_many`` (counted from 0, as ``call_of``
    counts) was refused, and that none of the batch was stored."""
    return (
        f"Call {number} (counting from 0) of enqueue_many() for task {task.module_path!r} "
        f"was refused, so none of its {total} calls were stored"
    )


def _refused_call(
    error: TypeError | ValueError, task: Task, number: int, total: int
) -> TypeError | ValueError:
    """Return ``error``, raised by call ``number`` of an ``enqueue_many``, naming that call."""
    message = f"{_refusal(task, number, total)}: {error}"
    if isinstance(error, UnstorableArguments):  # a TypeError and a ValueError: kept both
        return UnstorableArguments(message)
    # The base type: a subclass may take other constructor arguments (UnicodeError does).
    kind = TypeError if isinstance(error, TypeError) else ValueError
    return kind(message)


class EnqueuePipeline:
    """Store tasks for one ``TASKS`` entry and read their results back.

    Tasks reach it validated (the backend's ``validate_task``). ``sender`` is the backend
    class, the sender of ``task_enqueued`` as Django sends it.
    """

    def __init__(self, settings: BackendSettings, sender: type) -> None:
        self.settings = settings
        self.sender = sender
        self.broker = Broker(settings)
        self.enqueuer = Enqueuer(self.broker, announcer(sender))

    def waits_for_commit(self, task: Task) -> bool:
        """Tell whether ``task`` waits for the commit: its own choice, else OPTIONS."""
        choice = getattr(task, "enqueue_on_commit", None)
        return self.settings.enqueue_on_commit if choice is None else bool(choice)

    def enqueue(self, task: Task, args: Sequence[Any], kwargs: dict[str, Any]) -> TaskResult:
        """Store one call in one Redis call, shared with concurrent callers.

        With ``enqueue_on_commit``, inside a transaction the write waits for its commit. A
        unique task equal to an unfinished one returns that task's result and stores nothing.
        """
        new, result = prepare(task, *checked_call(args, kwargs), broker=self.broker)
        if self._stored_at_commit(task, [(new, result)]):
            return result
        [stored] = self._stored_or_held([(new, result)])
        return stored

    async def aenqueue(self, task: Task, args: Sequence[Any], kwargs: dict[str, Any]) -> TaskResult:
        """Async twin of ``enqueue``, on the asyncio client (no thread hop).

        Django refuses atomic() in async code, so this writes at once unless a project entered
        one anyway (DJANGO_ALLOW_ASYNC_UNSAFE): then, with enqueue_on_commit, it waits for it.
        """
        new, result = prepare(task, *checked_call(args, kwargs), broker=self.broker)
        if self._stored_at_commit(task, [(new, result)]):
            return result
        tries = READ_BACK_TRIES  # as in _stored_or_held
        while (holder := await self.enqueuer.aenqueue(task.queue_name, new, result)) is not None:
            record = await self.broker.arecord(holder)
            tries -= 1
            if record is not None or not tries:
                return self.result_from(holder, record)
        return result

    def enqueue_many(self, task: Task, calls: Iterable[Call]) -> list[TaskResult]:
        """Store many calls of one task in one atomic script call: all are stored, or none.

        Every call is encoded before anything is sent.
        """
        prepared = self._prepared_calls(task, calls_of(calls))
        if not prepared:
            return []
        if self._stored_at_commit(task, prepared):
            return [result for _, result in prepared]
        return self._stored_or_held(prepared)

    def _prepared_calls(
        self, task: Task, calls: Sequence[Call]
    ) -> list[tuple[NewTask, TaskResult]]:
        """Encode every call of an ``enqueue_many`` before anything is sent; a refused call's
        error says which it was, since its task's name is the same for every call."""
        prepared: list[tuple[NewTask, TaskResult]] = []
        for number, (args, kwargs) in enumerate(calls):
            try:
                new, result = encode_call(task, args, kwargs, broker=self.broker)
            except (TypeError, ValueError) as exc:
                raise _refused_call(exc, task, number, len(calls)) from exc
            try:
                prepared.append(unique_call(task, new, result, broker=self.broker))
            except Exception as exc:  # the task's unique_key's own error (a ValueError too)
                exc.add_note(f"{_refusal(task, number, len(calls))}.")
                raise
        return prepared

    def enqueue_guarded(
        self, task: Task, args: Sequence[Any], kwargs: dict[str, Any], *, task_id: str, guard: Guard
    ) -> TaskResult | None:
        """Store one call under a given id and guard; return None if the script skipped it.

        Schedules use it (docs/schedules.md): the id derives from the slot, and the guard makes
        the script skip a slot at or before the last one fired. A receiver's error is logged,
        not raised: the slot is fired, and the scheduler has nobody to raise it to.
        """
        new, result = encode_call(
            task, args, kwargs, broker=self.broker, task_id=task_id, guard=guard
        )
        if not self.broker.enqueue(task.queue_name, [new]).stored:
            return None
        announce_guarded(self.sender, [result])
        return result

    def _stored_at_commit(self, task: Task, prepared: Sequence[tuple[NewTask, TaskResult]]) -> bool:
        """Store ``prepared`` when the open transaction commits, if ``task`` waits for it;
        return False when the caller is to store them now.

        At the commit a receiver's error is logged, not raised: the tasks are stored, and
        Django runs none of the transaction's later on_commit callbacks (its other enqueues)
        after one that raised. A write Redis refuses still raises there (docs/enqueue.md).
        """
        return self.waits_for_commit(task) and defer_to_commit(
            partial(self._store_at_commit, prepared), [result for _, result in prepared]
        )

    def _store_at_commit(self, prepared: Sequence[tuple[NewTask, TaskResult]]) -> None:
        """Write ``prepared`` at the commit, keeping the ids of those found duplicates: their
        caller holds an id never stored (docs/schedules.md, Unique tasks)."""
        holders = self._store(prepared, announce_guarded)
        note_duplicates([result.id for _, result in prepared], holders)

    def _stored_or_held(
        self, prepared: Sequence[tuple[NewTask, TaskResult]], tries: int = READ_BACK_TRIES
    ) -> list[TaskResult]:
        """Store prepared tasks of one queue; return, per task, its own result, or the result
        of the unfinished task it duplicates, read back in one round trip.

        A duplicate's holder may finish and expire (a short ``result_ttl``) between the
        script's reply and that read: the key is free then, so the call is stored again.
        """
        holders = self._store(prepared)
        held_ids = list(dict.fromkeys(holder for holder in holders if holder))
        if not held_ids:  # the usual case: no read back
            return [result for _, result in prepared]
        held = dict(zip(held_ids, self.get_results(held_ids), strict=True))
        gone = [
            (each, holder)
            for each, holder in zip(prepared, holders, strict=True)
            if holder and held[holder] is None
        ]
        if gone and tries == 1:
            raise TaskResultDoesNotExist(gone[0][1])
        again = iter(self._stored_or_held([each for each, _ in gone], tries - 1) if gone else [])
        return [
            result if holder is None else held[holder] or next(again)
            for (_, result), holder in zip(prepared, holders, strict=True)
        ]

    def _store(
        self,
        prepared: Sequence[tuple[NewTask, TaskResult]],
        announce_stored: Announcer = announce_all,
    ) -> list[str | None]:
        """Write prepared tasks of one queue (coalesced when alone), then send task_enqueued
        for those stored; return, per task, the id of the unfinished task it duplicates.

        A receiver's error is raised once every stored task was announced (``announce_all``;
        ``announce_guarded`` logs it instead); a sharded call stored in part announces what
        it wrote, then raises ``PartlyEnqueued``.
        """
        if len(prepared) == 1:
            [(new, result)] = prepared
            holders = [self.enqueuer.enqueue(result.task.queue_name, new)]
        else:
            queue = prepared[0][1].task.queue_name
            tasks = [new for new, _ in prepared]
            try:
                existing = self.broker.enqueue(queue, tasks).existing
            except MaybeApplied as exc:  # no results reach the caller: the error names the ids
                raise maybe_stored(exc, [new.id for new in tasks]) from exc.__cause__
            except PartlyEnqueued as exc:  # docs/enqueue.md, Bulk enqueue
                written = exc.written - exc.existing.keys()
                announce_guarded(self.sender, [r for n, r in prepared if n.id in written])
                raise
            holders = [existing.get(new.id) for new, _ in prepared]
        stored = zip(prepared, holders, strict=True)
        announce_stored(self.sender, [result for (_, result), holder in stored if holder is None])
        return holders

    def get_result(self, result_id: str) -> TaskResult:
        """Return the result of ``result_id`` in any state, until result_ttl after it finished."""
        return self.result_from(result_id, self.broker.record(result_id))

    def get_results(self, result_ids: Sequence[str]) -> list[TaskResult | None]:
        """``get_result`` of each of ``result_ids`` in one round trip; None where unknown."""
        return [
            None if record is None else self.result_from(result_id, record)
            for result_id, record in zip(result_ids, self.broker.records(result_ids), strict=True)
        ]

    async def aget_result(self, result_id: str) -> TaskResult:
        """Async twin of ``get_result``, on the asyncio client."""
        return self.result_from(result_id, await self.broker.arecord(result_id))

    def result_from(self, result_id: str, record: dict[str, str] | None) -> TaskResult:
        """Return the result the record of ``result_id`` read back stands for;
        ``TaskResultDoesNotExist`` for none, ``PayloadError`` when it cannot be built (its
        task no longer imports, its payload is damaged)."""
        if record is None:
            raise no_such_result(result_id)
        try:
            payload = decode_payload(record.get("payload"))
        except PayloadError as exc:
            raise unreadable_payload(result_id, self.broker.record_key(result_id), exc) from exc
        if (held := record_problem(record)) is not None:
            raise damaged_fields(result_id, self.broker.record_key(result_id), held)
        task = load_task(
            payload["path"],
            backend=self.settings.alias,
            queue=queue_of(result_id) or "",
            payload=payload,
            validate=False,  # a result reads back whatever the settings say since
        )
        result = stored_result(task, result_id, payload, record)
        if record.get("state") == "reserved":  # started here, its start notice still held
            return as_started_here(result, record.get("token"))
        return result


_pipelines: dict[tuple[type, str, str, str], list[EnqueuePipeline]] = {}
_pipelines_lock = Lock()


def _fresh_lock_after_fork() -> None:
    """Give a forked child a free lock: a parent thread making its backend's pipeline at the
    fork held it, did not come along, and the child's first enqueue waited for it forever."""
    global _pipelines_lock
    _pipelines_lock = Lock()


os.register_at_fork(after_in_child=_fresh_lock_after_fork)

# The sets of the open ``pipelines_handed_out`` blocks: empty outside a test's isolation.
_watches: list[set[EnqueuePipeline]] = []


def pipeline_for(sender: type, settings: BackendSettings) -> EnqueuePipeline:
    """Return the process-wide pipeline for equal ``settings``, made on first use.

    Django builds one backend per thread; sharing keeps one connection pool per process and
    lets the enqueues of every thread share round trips. Pipelines are found by the alias,
    location and key prefix, then by equal settings, so a changed ``TASKS`` entry (a test's
    override) gets a pipeline of its own.
    """
    key = (sender, settings.alias, settings.location, settings.key_prefix)
    with _pipelines_lock:
        same_place = _pipelines.setdefault(key, [])
        found = next((each for each in same_place if each.settings == settings), None)
        if found is None:
            found = EnqueuePipeline(settings, sender)
            same_place.append(found)
        for seen in _watches:
            seen.add(found)
        return found


@contextmanager
def pipelines_handed_out() -> Iterator[set[EnqueuePipeline]]:
    """Collect every pipeline ``pipeline_for`` hands out inside the block, in any thread.

    A test's isolation (django_threadmill.testing) flushes their keys after the test: a
    ``TASKS`` the test set itself wrote keys its settings no longer name then. Only it opens
    one; a backend asks ``pipeline_for`` once, not per enqueue.
    """
    seen: set[EnqueuePipeline] = set()
    with _pipelines_lock:
        _watches.append(seen)
    try:
        yield seen
    finally:
        with _pipelines_lock:  # by identity: two sets of the same pipelines are equal
            _watches[:] = [each for each in _watches if each is not seen]


def pipelines_sharing(settings: BackendSettings) -> list[EnqueuePipeline]:
    """Return the pipelines made so far for the keys under the location and key prefix of
    ``settings``, whatever their alias and other settings: a flush deletes every alias's keys
    under the prefix, so it is theirs too."""
    place = (settings.location, settings.key_prefix)
    with _pipelines_lock:
        return [each for key, made in _pipelines.items() if key[2:] == place for each in made]
