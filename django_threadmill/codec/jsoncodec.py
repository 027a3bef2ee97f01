"""Compact JSON encoding (``,`` and ``:``, no NaN), made once and used for every value.

``refuse_key_clash`` guards what a task is given or returns against a dict whose keys JSON
would collapse into one (``{1: "a", "1": "b"}``), or Django's ``normalize_json`` already did
(``{b"a": 1, "a": 2}``, bytes being decoded): the task would silently see only one of them.

``JSONEncoder.encode`` builds a new C encoder on each call: for an enqueue payload that was
1.9 µs of 3.3. The C encoder is built here once instead; its constructor is private
to the ``json`` package, so it is checked against the public encoder at import, and if it ever
changes (or is missing) the public encoder is used.
"""

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

PUBLIC = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
# A probe whose encoding must come out the same both ways: escapes, floats, nesting, null.
PROBE = {"a": [1.5, -0.0, 10**20, 'é\n"', None, True], "b": {"c": []}}


def _reused_c_encoder() -> Callable[[Any], str] | None:
    """Return the public encoder's C encoder, built once, or None if it cannot be."""
    try:
        from _json import make_encoder

        encoder = make_encoder(
            None,  # no circular check: values are normalised first, so they are trees
            PUBLIC.default,
            json.encoder.encode_basestring_ascii,
            None,
            PUBLIC.key_separator,
            PUBLIC.item_separator,
            PUBLIC.sort_keys,
            PUBLIC.skipkeys,
            PUBLIC.allow_nan,
        )

        def encode(value: Any) -> str:
            return "".join(encoder(value, 0))

        if encode(PROBE) != PUBLIC.encode(PROBE):
            return None
    except Exception:  # another Python's private signature: the public encoder does it
        return None
    return encode


dumps: Callable[[Any], str] = _reused_c_encoder() or PUBLIC.encode


def _json_key(key: Any) -> str | None:
    """Return the key JSON writes for the dict key ``key`` once normalised (bytes are decoded),
    in the ``json`` module's order of rules; None for a key it refuses (encoding raises
    ``TypeError`` for it)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode()  # as normalize_json did, or it would have refused the value
    if isinstance(key, float):
        return float.__repr__(key)
    if key is True or key is False or key is None:
        return PUBLIC.encode(key)
    return int.__repr__(key) if isinstance(key, int) else None


# What refuse_key_clash tells at a glance: the containers it walks, the values that hold none.
_CONTAINERS = frozenset({dict, list, tuple})
_LEAVES = frozenset({str, bytes, int, float, bool, type(None)})


def refuse_key_clash(given: Any) -> None:
    """Raise ``ValueError`` naming two keys of one dict in ``given`` that JSON writes the same.

    ``given`` is a value as passed, which ``normalize_json`` took without error: a tree (a value
    holding itself was refused) of mappings and sequences, whose bytes keys it decoded. Only a
    mapping with a key that is not a str can hold such a pair, so the usual arguments cost a
    walk over their containers and nothing more (0.5-2 µs an enqueue).
    """
    pending: list[Any] = [(given,)]  # held in a tuple: it is walked as any child is
    while pending:
        item = pending.pop()
        if type(item) is dict or (type(item) not in _CONTAINERS and isinstance(item, Mapping)):
            for key in item:
                if type(key) is not str:
                    _compare_keys(item)
                    break
            item = item.values()
        for child in item:
            kind = type(child)
            if kind not in _LEAVES and (kind in _CONTAINERS or _is_container(child)):
                pending.append(child)


def _is_container(value: Any) -> bool:
    """Whether ``normalize_json`` normalised values held in ``value``: a mapping, or a sequence
    that is no str or bytes."""
    return isinstance(value, Mapping) or (
        isinstance(value, Sequence) and not isinstance(value, str | bytes)
    )


def _compare_keys(mapping: Mapping[Any, Any]) -> None:
    """Raise ``ValueError`` if two keys of ``mapping`` are written as one JSON key."""
    seen: dict[str, Any] = {}
    for key in mapping:
        written = _json_key(key)
        other = seen.setdefault(written, key) if written is not None else key
        if other is not key:
            raise ValueError(
                f"keys {other!r} and {key!r} of one dict are both the JSON key {written!r}, "
                "so one would be lost"
            )
