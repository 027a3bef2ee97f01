"""Output that cannot change a command's answer: ``threadmill_health`` answers with its exit
code, and ``threadmill_worker`` tells its service manager with one whether to restart it.

An orchestrator or a script reads the exit code; the line is for a person. Written to a stdout
or stderr that is closed (``>&-``), whose reader has gone (``| head -c0``) or that is full
(``/dev/full``), the line failed the command: a healthy host exited 1 ("too few") or, at
Python's last flush, 120, and Redis down exited 1 instead of 3; a burst worker exited 1 instead
of 0 or 5 (the system checks' warnings failed to write), a refused one 1 instead of 4.
"""

import os
import sys
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand


class ProbeStream:
    """A text stream that drops what it cannot write, instead of raising."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream  # None: Python started with that descriptor closed

    def write(self, text: str) -> int:
        stream = self._stream
        if stream is not None:
            try:
                stream.write(text)
                stream.flush()  # fail now, where it is caught, not at Python's exit
            except (OSError, ValueError):  # ValueError: a file object closed already
                self._stream = None
                silence(stream)
        return len(text)

    def flush(self) -> None:
        """Do nothing: ``write`` flushed already."""

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False


def probe_stream(stream: TextIO | None) -> TextIO:
    """Return ``stream`` wrapped in a ProbeStream, typed as the stream Django's commands take
    (they call its ``write``, ``flush`` and ``isatty`` only)."""
    return cast(TextIO, ProbeStream(stream))


def silence(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null.

    Python flushes stdout and stderr again as it exits, what the failed write left in the
    buffer included, and a failure there turns any exit code into 120.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):  # no descriptor (a StringIO): nothing is flushed at exit
        pass


class ExitCodeCommand(BaseCommand):
    """A command whose exit code is its answer: its lines (the system checks' warnings, a
    ``CommandError``) are written where no failed write can change it."""

    def __init__(
        self, stdout: TextIO | None = None, stderr: TextIO | None = None, **kwargs: Any
    ) -> None:
        super().__init__(
            probe_stream(stdout or sys.stdout), probe_stream(stderr or sys.stderr), **kwargs
        )
