"""A call whose arguments hold themselves (a dict that contains itself, two lists holding each
other) is refused naming where the cycle closes: "nested too deeply ... Flatten them" sent the
user looking for a depth the arguments do not have."""

import asyncio
import gc
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import UnstorableArguments
from testproject.example.tasks import echo

CYCLE = r"is .*, which holds it: a circular reference JSON cannot store"


@pytest.fixture(autouse=True)
def nothing_left_to_collect() -> None:
    """Collect what earlier tests left first: a finalizer the collector runs while JSON's
    encoder is at the recursion limit (an event loop's ``__del__``) raises RecursionError
    there, which pytest reports as an error of this test (seen once on Python 3.13)."""
    gc.collect()


def test_a_dict_holding_itself_is_named_with_its_place(backend: ThreadmillTaskBackend) -> None:
    order: dict[str, Any] = {"id": 7}
    order["self"] = order
    with pytest.raises(UnstorableArguments, match=r"kwargs\['order'\]\['self'\] " + CYCLE):
        echo.enqueue(order=order)


def test_lists_holding_each_other_are_named_in_aenqueue_and_enqueue_many(
    backend: ThreadmillTaskBackend,
) -> None:
    parent: list[Any] = ["parent"]
    child: list[Any] = ["child", parent]
    parent.append(child)
    with pytest.raises(UnstorableArguments, match=r"args\[0\]\[1\]\[1\] " + CYCLE):
        asyncio.run(echo.aenqueue(parent))
    with pytest.raises(TypeError, match=r"args\[0\]\[1\]\[1\] " + CYCLE):
        backend.enqueue_many(echo, [((parent,), {})])


def test_arguments_too_deep_without_a_cycle_are_still_named_too_deep(
    backend: ThreadmillTaskBackend,
) -> None:
    shared: list[Any] = []
    nested: list[Any] = [shared, shared]  # one list met twice is no cycle
    for _ in range(100_000):
        nested = [nested]
    with pytest.raises(UnstorableArguments, match=r"nested too deeply") as raised:
        echo.enqueue(nested)
    assert "circular" not in str(raised.value)


def test_a_cycle_closing_deep_in_the_call_is_named_short(backend: ThreadmillTaskBackend) -> None:
    top: list[Any] = []
    deepest = top
    for _ in range(5_000):
        deepest.append([])
        deepest = deepest[0]
    deepest.append(top)
    with pytest.raises(UnstorableArguments, match=CYCLE) as raised:
        echo.enqueue(top)
    shown_path = "args" + "[0]" * 9 + "[…4,983 more…]" + "[0]" * 10
    assert f": {shown_path} is args[0], which holds it" in str(raised.value)
    assert len(str(raised.value)) < 400
