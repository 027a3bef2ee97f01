"""Output an operator reads, and may cut short: ``threadmill_queue damaged | head``.

Written to a stdout whose reader had gone, that was closed (``>&-``) or full, a line failed
with a BrokenPipeError traceback, and ``forget-damaged --all`` went on dropping entries
nobody saw. Here such a write raises OutputClosed, which the command handles where it stops.
"""

import sys
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand

from .probe_output import ProbeStream, probe_stream, silence


class OutputClosed(Exception):
    """stdout takes no more lines: its reader has gone, or it is closed or full."""


class ReportStream(ProbeStream):
    """A text stream that writes each line through at once and raises OutputClosed when it
    cannot: a line is on its way when ``write`` returns, or the command learns it is not."""

    def write(self, text: str) -> int:
        stream = self._stream
        if stream is None:
            raise OutputClosed
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError) as exc:  # ValueError: a file object closed already
            self._stream = None
            silence(stream)  # what the failed write left must not fail Python's exit flush
            raise OutputClosed from exc
        return len(text)


def report_stream(stream: TextIO | None) -> TextIO:
    """Return ``stream`` wrapped in a ReportStream, typed as the stream Django's commands take
    (they call its ``write``, ``flush`` and ``isatty`` only)."""
    return cast(TextIO, ReportStream(stream))


class CutShortCommand(BaseCommand):
    """A command whose listing an operator may cut short (``| head``): a line goes out as it is
    written, or the command ends there with exit code 1 and no traceback; its error line is
    written where a failed write cannot turn it into one either."""

    def __init__(
        self, stdout: TextIO | None = None, stderr: TextIO | None = None, **kwargs: Any
    ) -> None:
        super().__init__(
            report_stream(stdout or sys.stdout), probe_stream(stderr or sys.stderr), **kwargs
        )

    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except OutputClosed:  # its reader has gone (| head): it read what it wanted
            raise SystemExit(1) from None
