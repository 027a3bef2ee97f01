"""broker.payloads: the task path and run_after_ms read in place, whatever the arguments hold."""

import json

import pytest

from django_threadmill.codec.jsoncodec import dumps
from django_threadmill.codec.payloads import run_after_ms, task_path

TRICKY = ['"run_after_ms":7}', '{"path":"evil.task"}']  # argument text that looks like keys


def payload(run_after: int | None, **dumps_options: object) -> str:
    data = {"path": "shop.tasks.ship", "args": TRICKY, "kwargs": {}, "priority": 0}
    data["run_after_ms"] = run_after
    return json.dumps(data, **dumps_options) if dumps_options else dumps(data)


@pytest.mark.parametrize("options", [{}, {"indent": None}, {"separators": (", ", ": ")}])
@pytest.mark.parametrize("run_after", [None, 1_700_000_000_000])
def test_fields_are_read_as_written(options: dict[str, object], run_after: int | None) -> None:
    stored = payload(run_after, **options)
    assert task_path(stored) == "shop.tasks.ship"
    assert run_after_ms(stored) == run_after


@pytest.mark.parametrize("stored", ["", "not json", '{"path": 5}', "[1]"])
def test_unreadable_payloads_read_as_nothing(stored: str) -> None:
    assert task_path(stored) == ""
    assert run_after_ms(stored) is None


@pytest.mark.parametrize("path", ['odd"name.task', "caf\u00e9.task", "back\\slash.task"])
def test_a_path_with_escapes_is_decoded_not_cut(path: str) -> None:
    for stored in (dumps({"path": path, "args": []}), json.dumps({"path": path, "args": []})):
        assert task_path(stored) == path
