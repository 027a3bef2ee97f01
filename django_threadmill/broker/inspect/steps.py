"""Read what a workflow's page shows of its steps' records: a bounded part of each.

The page shows a step's state, and why its result cannot be built when it cannot. It read
every shown step's record whole, errors included, and built each result: 200 MB for a page
of 200 steps returning 1 MB each (docs/admin.md, Cost per page view).
"""

from collections.abc import Sequence
from dataclasses import dataclass

from ..broker import Broker
from ..connection import readable_replies
from ..raw_replies import RAW, escaped
from ..reads import damaged_record

CHECKED = ("payload", "result")  # read only when short enough: to check that they decode


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRecord:
    """What a workflow's page read of one step's record."""

    values: dict[str, str]  # its state, and those of CHECKED no longer than the page reads
    unread: frozenset[str]  # those of CHECKED longer than that, left unread
    damaged: str = ""  # why it cannot be read at all: its key is not a hash


type Look = tuple[str, list[bytes | None], list[int]]  # its key's type, its state, CHECKED lengths


def _looks(broker: Broker, keys: Sequence[str]) -> list[Look]:
    """Return the type, the state and the lengths of CHECKED of each record ``keys``."""
    with broker.client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.type(key)
            pipe.execute_command("HMGET", key, "state", **RAW)
            for name in CHECKED:
                pipe.hstrlen(key, name)
        replies = iter(readable_replies(pipe.execute(raise_on_error=False)))
    return [(next(replies), next(replies), [next(replies) for _ in CHECKED]) for _ in keys]


def _values(broker: Broker, keys: Sequence[str], wanted: list[list[str]]) -> list[dict[str, bytes]]:
    """Return the ``wanted`` fields of each record ``keys``: one HMGET each that wants any."""
    with broker.client.pipeline(transaction=False) as pipe:
        for key, names in zip(keys, wanted, strict=True):
            if names:
                pipe.execute_command("HMGET", key, *names, **RAW)
        replies = iter(readable_replies(pipe.execute(raise_on_error=False)))
    values = []
    for names in wanted:
        reply = next(replies) if names else []
        # A key that changed type since its look (written by hand meanwhile): nothing read.
        read = [] if isinstance(reply, Exception) else zip(names, reply, strict=True)
        values.append({name: value for name, value in read if value is not None})
    return values


def _record(
    task_id: str, key: str, look: Look, read: dict[str, bytes], most_bytes: int
) -> StepRecord | None:
    kind, state, sizes = look
    if kind == "none":
        return None
    if kind != "hash":
        damaged = str(damaged_record(task_id, key, kind))
        return StepRecord(values={}, unread=frozenset(), damaged=damaged)
    values = {"state": state[0], **read} if state[0] is not None else read
    return StepRecord(
        values={name: escaped(value) for name, value in values.items()},
        unread=frozenset(n for n, size in zip(CHECKED, sizes, strict=True) if size > most_bytes),
    )


def step_records(
    broker: Broker, task_ids: Sequence[str], most_bytes: int
) -> list[StepRecord | None]:
    """Return the state of each record of ``task_ids``, and its payload and result where each
    is at most ``most_bytes`` long; None where it is gone.

    Two round trips: ``TYPE``, the state and the ``HSTRLEN`` of CHECKED of every record, then
    one ``HMGET`` of those short enough per record.
    """
    keys = [broker.record_key(task_id) or "" for task_id in task_ids]
    with broker.translated_errors(read=True):
        looks = _looks(broker, keys)
        wanted = [
            [name for name, size in zip(CHECKED, sizes, strict=True) if 0 < size <= most_bytes]
            if kind == "hash"
            else []
            for kind, _, sizes in looks
        ]
        values = _values(broker, keys, wanted)
    return [_record(*step, most_bytes) for step in zip(task_ids, keys, looks, values, strict=True)]
