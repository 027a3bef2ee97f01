"""Find where, in a call's arguments, the value that JSON cannot store is.

Django's ``normalize_json`` names only the type it refused ("Unsupported type: <class
'datetime.datetime'>"); in a large argument the value was hard to find. The rules are its
rules, then JSON's: mappings and sequences are walked, bytes must be UTF-8, floats finite,
ints short enough for Python to write, and dict keys str, int, float, bool or None.
"""

import math
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from ..wording import a_type, an_int_of_its_size

JSON_KEYS = (str, bytes, int, float, bool, type(None))  # bytes keys are decoded first


def unstorable_at(args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """Return where the first value JSON cannot store is, and what it is, as
    "kwargs['rows'][3]['when'] is a datetime"; None if every value can be stored on its own."""
    return _first_unstorable([("kwargs", kwargs), ("args", list(args))])


def unstorable_in(value: Any, name: str) -> str | None:
    """Return where in ``value`` (called ``name``) the first value JSON cannot store is, as
    "return value['rows'][3] is nan"; None if every value can be stored on its own."""
    return _first_unstorable([(name, value)])


def _first_unstorable(pending: list[tuple[str, Any]]) -> str | None:
    """Walk ``pending`` (named values, the last walked first) for the first unstorable value."""
    walked: set[int] = set()  # containers already walked: a shared one once, a cycle ends
    while pending:  # depth first, in order: a stack, children pushed in reverse
        path, value = pending.pop()
        problem = _problem(value)
        if problem is not None:
            return f"{path} {problem}"
        if id(value) in walked:
            continue
        walked.add(id(value))
        children: list[tuple[str, Any]] = []
        if isinstance(value, Mapping):
            for key, child in value.items():
                if not isinstance(key, JSON_KEYS) or _problem(key) is not None:
                    return f"{path} has {_key_named(key)}, not a JSON key"
                children.append((f"{path}[{reprlib.repr(key)}]", child))
        elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
            children = [(f"{path}[{index}]", child) for index, child in enumerate(value)]
        pending.extend(reversed(children))
    return None


def _key_named(key: Any) -> str:
    """Name a refused dict key: "the key (1, 2), a tuple"; by what it is when its repr fails,
    as an int too long for Python to write fails it: "a key that is an int of about 5000
    digits"."""
    try:
        return f"the key {reprlib.repr(key)}, {a_type(key)}"
    except ValueError:  # sys.get_int_max_str_digits(), in the key or in a tuple key
        return f"a key that {_problem(key) or f'is {a_type(key)}'}"


def _problem(value: Any) -> str | None:
    """Say what makes ``value`` itself unstorable ("is a set"); None for a value JSON writes,
    and for a mapping or sequence, whose values are walked."""
    if value is None or isinstance(value, str | bool | Mapping):
        return None
    if isinstance(value, bytes):
        try:
            value.decode()
        except UnicodeDecodeError:
            return "is bytes that are not UTF-8"
        return None
    if isinstance(value, int):
        try:
            int.__repr__(value)
        except ValueError:  # sys.get_int_max_str_digits()
            return f"is {an_int_of_its_size(value)}"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"is {value!r}"
    if isinstance(value, Sequence):
        return None
    return f"is {a_type(value)}"
