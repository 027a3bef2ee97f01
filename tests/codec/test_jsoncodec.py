"""The compact JSON encoder made once encodes exactly as json.dumps does."""

import json
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
