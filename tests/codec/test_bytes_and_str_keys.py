"""A dict whose bytes key and str key are one key once the bytes are decoded is refused.

Django's ``normalize_json`` decodes bytes, keys too, so ``{b"a": 1, "a": 2}`` became
``{"a": 2}``: one value silently lost, where ``{1: "a", "1": "b"}`` was refused naming both
keys (docs/enqueue.md, One call, one round trip). Now both are refused alike.
"""

import re
from typing import Any

import pytest

from django_threadmill.broker import Broker
from django_threadmill.codec.results import encode_result
from testproject.example.tasks import echo

CLASH = "keys b'a' and 'a' of one dict are both the JSON key 'a', so one would be lost"


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (({b"a": 1, "a": 2},), {}),
        ((), {"value": {b"a": 1, "a": 2}}),
        (((0, [{"x": {b"a": 1, "a": 2}}]),), {}),
    ],
    ids=["in args", "in kwargs", "nested in a tuple"],
)
def test_an_enqueue_with_a_bytes_and_a_str_key_that_meet_is_refused(
    broker: Broker, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError, match=re.escape(CLASH)):
        echo.enqueue(*args, **kwargs)
    assert broker.client.zrange(broker.queue_keys("default").ready, 0, -1) == []


def test_a_return_value_with_a_bytes_and_a_str_key_that_meet_is_refused() -> None:
    with pytest.raises(TypeError, match=re.escape(CLASH)):
        encode_result([{b"a": 1, "a": 2}], "app.tasks.t", 1000)


def test_bytes_keys_that_stay_apart_are_kept_as_text() -> None:
    assert encode_result({b"a": 1, "b": 2, 3: [{b"c": b"d"}]}, "app.tasks.t", 1000) == (
        {"a": 1, "b": 2, 3: [{"c": "d"}]},
        '{"a":1,"b":2,"3":[{"c":"d"}]}',
    )
