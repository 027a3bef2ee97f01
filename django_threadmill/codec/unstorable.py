"""Find where, in a call's arguments, the value that JSON cannot store is.

Django's ``normalize_json`` names only the type it refused ("Unsupported type: <class
'datetime.datetime'>"); in a large argument the value was hard to find. The rules are its
rules, then JSON's: mappings and sequences are walked, bytes must be UTF-8, floats finite,
ints short enough for Python to write, and dict keys str, int, float, bool or None. The Django
values most often passed by mistake are named with their fix: a model instance, a QuerySet, a
lazy string (its type read "a __proxy__"), a TaskResult.
"""

import math
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Model, QuerySet
from django.utils.functional import Promise

from ..compat import TaskResult
from ..wording import a_type, an_int_of_its_size

JSON_KEYS = (str, bytes, int, float, bool, type(None))  # bytes keys are decoded first
PATH_ENDS = 10  # steps of a long path shown at each end


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
        if isinstance(value, Mapping):
            for key in value:
                if not isinstance(key, JSON_KEYS) or _problem(key) is not None:
                    return f"{path} has {_key_named(key)}, not a JSON key"
        pending.extend((path + step, child) for step, child in reversed(_children(value)))
    return None


def circular_at(args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """Return where a value of the call holds a container it sits in, as "args[0]['self'] is
    args[0], which holds it: ..."; None if the call is a tree. Asked once encoding ran out of
    stack: a cycle does that too, and "nested too deeply" sent the user after a depth the
    arguments did not have."""
    # Each value met, as its parent's index and its step from there ("[0]", "['self']"): its
    # path is built only to be shown, as paths built on the way grew with the depth.
    steps: list[tuple[int, str]] = [(-1, "kwargs"), (-1, "args")]
    on_path: dict[int, int] = {}  # the containers being walked, by id: their index in steps
    done: set[int] = set()  # containers walked whole: a shared one is met again, no cycle
    # (index, value, leaving): a container is pushed again, to leave the path once its
    # children were walked. Depth first, with a stack: a deep call must not recurse here.
    pending: list[tuple[int, Any, bool]] = [(0, kwargs, False), (1, list(args), False)]
    while pending:
        index, value, leaving = pending.pop()
        if leaving:
            del on_path[id(value)]
            done.add(id(value))
            continue
        if id(value) in on_path:
            return (
                f"{_path(steps, index)} is {_path(steps, on_path[id(value)])}, which holds it: "
                "a circular reference JSON cannot store"
            )
        children = _children(value)
        if not children or id(value) in done:
            continue
        on_path[id(value)] = index
        pending.append((index, value, True))
        for step, child in reversed(children):
            steps.append((index, step))
            pending.append((len(steps) - 1, child, False))
    return None


def _path(steps: list[tuple[int, str]], index: int) -> str:
    """Return the path of the value at ``index`` in ``steps``, its middle cut short past
    2 * PATH_ENDS steps: a cycle closing deep in the call must not fill the message."""
    path: list[str] = []
    while index >= 0:
        index, step = steps[index]
        path.append(step)
    path.reverse()
    if len(path) <= 2 * PATH_ENDS:
        return "".join(path)
    cut = len(path) - 2 * PATH_ENDS
    return f"{''.join(path[:PATH_ENDS])}[…{cut:,} more…]{''.join(path[-PATH_ENDS:])}"


def _children(value: Any) -> list[tuple[str, Any]]:
    """Return the values JSON would write inside ``value``, each with its step from it: a
    mapping's by key, a sequence's (no str or bytes) by index; none for the rest."""
    if isinstance(value, Mapping):
        return [(f"[{reprlib.repr(key)}]", child) for key, child in value.items()]
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [(f"[{index}]", child) for index, child in enumerate(value)]
    return []


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
    return f"is {_named(value)}"


def _named(value: Any) -> str:
    """Name a value JSON cannot store, with the fix for the Django values that are passed by
    mistake most often: the generic "Pass strings, numbers..." left the user to find it."""
    if isinstance(value, Model):
        return f"{a_type(value)} model instance (use its pk, and fetch the row where it is used)"
    if isinstance(value, QuerySet):
        return "a QuerySet (use a list of its pks: list(qs.values_list('pk', flat=True)))"
    if isinstance(value, Promise):
        return "a lazy string, as gettext_lazy and reverse_lazy make (use str() of it)"
    if isinstance(value, TaskResult):  # of a task enqueued from another
        return "a TaskResult (use its id, which get_result() reads back)"
    return a_type(value)
