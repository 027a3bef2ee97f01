"""An error is stored whatever its exception does while it is formatted (docs/worker.md), and
read back whatever was stored in its place."""

import json

import pytest

from django_threadmill.codec import results
from django_threadmill.codec.results import error_json, error_text, parse_error


class ExitingStr(Exception):
    def __str__(self) -> str:
        raise SystemExit("from __str__")


def test_error_text_says_what_str_raised() -> None:
    assert error_text(ExitingStr()) == "<str() of the exception raised SystemExit>"
    assert error_text(ValueError("plain")) == "plain"


def test_an_exception_traceback_cannot_format_is_stored_with_its_frames_and_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Python 3.12's traceback raises on notes that raise; the error is stored all the same."""

    def unformattable(exc: BaseException) -> list[str]:
        raise LookupError("notes")

    monkeypatch.setattr(results.traceback, "format_exception", unformattable)
    try:
        raise ExitingStr
    except ExitingStr as exc:
        stored = json.loads(error_json(exc))

    assert stored["exception_class_path"] == "tests.codec.test_errors.ExitingStr"
    lines = stored["traceback"].splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "raise ExitingStr" in stored["traceback"]
    assert lines[-1] == (
        "tests.codec.test_errors.ExitingStr: <str() of the exception raised SystemExit> "
        "(formatting it raised LookupError)"
    )


def test_a_huge_error_is_stored_and_logged_cut_keeping_its_start_and_end() -> None:
    """A 100 MB message was stored and logged whole; one of 600 MB failed its finish call."""
    message = "start " + "x" * 1_000_000 + " end"
    try:
        raise ValueError(message)
    except ValueError as exc:
        stored = json.loads(error_json(exc))["traceback"]
        logged = error_text(exc)
    cut = len(message) - results.MAX_ERROR_TEXT_CHARS
    assert len(stored) < results.MAX_TRACEBACK_CHARS + 100
    assert stored.startswith("Traceback (most recent call last):")
    assert stored.endswith(" end\n")
    assert "characters cut ...]" in stored
    assert logged.startswith("start xxx")
    assert logged.endswith(" end")
    assert f"\n[... {cut} characters cut ...]\n" in logged


def test_a_stored_error_reads_back_as_it_was_stored() -> None:
    try:
        raise ValueError("disk full")
    except ValueError as exc:
        error = parse_error(error_json(exc))

    assert error.exception_class_path == "builtins.ValueError"
    assert error.traceback.endswith("ValueError: disk full\n")


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        "",
        "[1, 2]",
        '"text"',
        '{"exception_class_path": "builtins.ValueError"}',
        '{"exception_class_path": "builtins.ValueError", "traceback": 7}',
        '{"exception_class_path": "builtins.ValueError", "traceback": null}',
        '{"exception_class_path": ["builtins.ValueError"], "traceback": "Traceback"}',
        '{"exception_class_path": true, "traceback": "Traceback"}',
        "[" * 5000,  # json raises RecursionError, not ValueError
    ],
)
def test_a_stored_error_not_made_of_two_strings_reads_as_unreadable(raw: str) -> None:
    """A traceback of 7 came back as TaskError(traceback=7), and the admin's page answered 500."""
    error = parse_error(raw)

    assert error.exception_class_path == "django_threadmill.exceptions.PayloadError"
    assert error.traceback == f"Stored error is not readable: {raw[:200]!r}"
