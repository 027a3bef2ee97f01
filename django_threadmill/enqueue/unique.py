"""Unique tasks: the digest that makes two enqueues equal, as a guard for the enqueue script."""

import json
from hashlib import sha256
from typing import Any

from ..broker import Guard, GuardKind
from ..codec.jsoncodec import dumps
from ..compat import Task
from ..conf.durations import whole_ms

DIGEST_CHARS = 32  # hex characters of sha256 kept in the key: 128 bits, no accidental collision
SORTED_KEYS = json.JSONEncoder(separators=(",", ":"), sort_keys=True)


def unique_guard(task: Task, args: list[Any], kwargs: dict[str, Any]) -> Guard | None:
    """Return the unique guard of one enqueue, or None for a task without ``unique_for``.

    Equal means the same task path and the same ``unique_key(args, kwargs)``, or, without one,
    the same arguments as stored (the order of keys in any dict does not matter). The queue is
    the key's hash tag, so the same call on another queue is a different task.
    """
    unique_for = getattr(task, "unique_for", None)
    if unique_for is None:
        return None
    # As stored, as the task gets them (docs/schedules.md, Unique tasks): {1: "a"} as
    # {"1": "a"}, an enum as its value; and a copy, so a key function that pops an argument
    # changes neither the result returned nor what task_enqueued receivers see.
    stored_args, stored_kwargs = json.loads(dumps([args, kwargs]))
    unique_key = getattr(task, "unique_key", None)
    if unique_key is None:
        # With every dict's keys sorted: keys that were not strings (1, None) sort as the
        # strings JSON made of them, so keys of mixed types sort too.
        key = SORTED_KEYS.encode([stored_args, stored_kwargs])
    else:
        key = unique_key(stored_args, stored_kwargs)
        if not isinstance(key, str):
            raise TypeError(
                f"unique_key of task {task.module_path!r} returned {key!r}, not a string. "
                "Return a str that names what makes two calls the same."
            )
    # surrogatepass: a key may hold a lone surrogate (a path from os.fsdecode), which strict
    # UTF-8 refuses; any other key hashes as before.
    text = f"{task.module_path}\n{key}".encode("utf-8", "surrogatepass")
    digest = sha256(text).hexdigest()[:DIGEST_CHARS]
    return Guard(kind=GuardKind.UNIQUE, name=digest, value_ms=whole_ms(unique_for))
