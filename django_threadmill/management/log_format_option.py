"""The ``--log-format`` option of the commands that run until stopped: the worker and the reaper,
and what it makes of everything those commands print."""

import logging
import sys
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any, TextIO

from django.core.management.base import BaseCommand, OutputWrapper

from ..worker.logs import JsonFormatter, logging_configured


def add_log_format_option(parser: ArgumentParser) -> None:
    """Add ``--log-format``, which ``worker/logs.logging_configured`` reads: text or JSON lines."""
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="text lines, or one JSON object per line for a log shipper (default: text).",
    )


class JsonLines(OutputWrapper):
    """A command's stdout or stderr under ``--log-format json``: each message it writes there
    (the reaper's ``--once`` report, a refused option's ``CommandError: ...`` once the logging
    is put back) comes out as one JSON object at ``level``, as the log lines around it, where it
    was a plain line that a collector reading the output line by line took for a broken
    entry."""

    def __init__(self, out: TextIO, logger: str, level: int) -> None:
        super().__init__(out)
        self.logger = logger
        self.level = level

    def write(  # type: ignore[override]  # OutputWrapper's own, which the stubs ignore too
        self,
        msg: str = "",
        style_func: Callable[[str], str] | None = None,
        ending: str | None = None,
    ) -> None:
        record = logging.makeLogRecord(
            {
                "name": self.logger,
                "levelno": self.level,
                "levelname": logging.getLevelName(self.level),
                "msg": msg.removesuffix("\n"),
            }
        )
        super().write(JsonFormatter().format(record), style_func=str, ending="\n")


class LogFormatCommand(BaseCommand):
    """A command with ``--log-format``: its logging set up before the system checks (a stop
    during them says so; a project whose LOGGING leaves django_threadmill alone would see no
    start, pass or stop line, and bare warnings), and under ``json`` every line it prints a
    JSON object (``JsonLines``: its output at INFO, its errors at ERROR; the checks' issues
    one record each)."""

    json_lines = False

    def execute(self, *args: Any, **options: Any) -> Any:
        self.json_lines = options["log_format"] == "json"
        if self.json_lines:
            self.stdout = JsonLines(sys.stdout, type(self).__module__, logging.INFO)
            self.stderr = JsonLines(sys.stderr, type(self).__module__, logging.ERROR)
        with logging_configured(options["log_format"], options["verbosity"]):
            return super().execute(*args, **options)
