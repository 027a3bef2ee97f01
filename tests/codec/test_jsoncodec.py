"""The compact JSON encoder made once encodes exactly as json.dumps does."""

import json
import re
from typing import Any

import pytest

from django_threadmill.codec import jsoncodec

VALUES = [
    {"path": "a.b", "args": ["x" * 100, 1, 2.5, -0.0, 10**30, True, None], "kwargs": {}},
    {"nested": [[[]], {"é": '\u2028"\\\n'}], "1": 1e-300},
    "plain",
    [],
]
REFUSED = [[float("nan")], {"x": float("inf")}, [object()], {"set": {1}}]


def reference(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


@pytest.mark.parametrize("value", VALUES)
def test_it_encodes_as_json_dumps(value: Any) -> None:
    assert jsoncodec.dumps(value) == reference(value)


@pytest.mark.parametrize("value", REFUSED)
def test_it_refuses_what_json_dumps_refuses_with_the_same_error(value: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as expected:
        reference(value)
    with pytest.raises(expected.type, match=f"^{expected.value}$"):
        jsoncodec.dumps(value)


def test_it_uses_the_c_encoder_made_once_where_it_can() -> None:
    assert jsoncodec.dumps is not jsoncodec.PUBLIC.encode


def test_a_changed_private_constructor_falls_back_to_the_public_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def changed(*args: Any) -> None:
        raise TypeError("make_encoder() takes 10 arguments")

    monkeypatch.setattr("_json.make_encoder", changed)
    assert jsoncodec._reused_c_encoder() is None


@pytest.mark.parametrize(
    ("value", "first", "second", "written"),
    [
        ({1: "a", "1": "b"}, 1, "1", "1"),
        ([{"x": {"true": 1, True: 2}}], "true", True, "true"),
        ({"a": [0, {None: 1, "null": 2}]}, None, "null", "null"),
        ({1.5: "a", "1.5": "b"}, 1.5, "1.5", "1.5"),
        ({-0.0: "a", "-0.0": "b"}, -0.0, "-0.0", "-0.0"),
        ((0, {b"1": "a", 1: "b"}), b"1", 1, "1"),  # bytes keys are decoded: "1" and 1
        ({"x": {b"a": 1, "a": 2}}, b"a", "a", "a"),  # normalize_json made them one key, silently
    ],
)
def test_values_whose_keys_json_would_merge_are_refused(
    value: Any, first: object, second: object, written: str
) -> None:
    # json.dumps writes both keys and json.loads keeps the last one: a value would be lost.
    message = f"keys {first!r} and {second!r} of one dict are both the JSON key {written!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}, so one would be lost$"):
        jsoncodec.refuse_key_clash(value)


@pytest.mark.parametrize(
    "value",
    [{1: "a", 2: "b"}, {"1": "a", "2": "b"}, [{True: 1, None: 2, 1.5: 3, "x": 4}], 5, "1", None],
)
def test_values_whose_keys_stay_apart_pass(value: Any) -> None:
    jsoncodec.refuse_key_clash(value)
