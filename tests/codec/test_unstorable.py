"""Finding the unstorable value in a call's arguments ends on shared and cyclic containers."""

from django_threadmill.codec.unstorable import unstorable_at


def test_a_cycle_before_the_bad_value_ends_the_walk() -> None:
    looped: list[object] = []
    looped.append(looped)
    nested: dict[str, object] = {}
    nested["self"] = nested
    nested["rows"] = [1, {"at": {1, 2}}]

    assert unstorable_at([looped], {"x": {1, 2}}) == "kwargs['x'] is a set"
    assert unstorable_at([], {"d": nested}) == "kwargs['d']['rows'][1]['at'] is a set"


def test_a_container_passed_twice_is_walked_once_and_still_checked() -> None:
    shared = [1, b"\xff"]

    assert unstorable_at([shared, shared], {}) == "args[0][1] is bytes that are not UTF-8"
    assert unstorable_at([[1], [1]], {}) is None
