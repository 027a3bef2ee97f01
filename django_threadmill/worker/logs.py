"""Log output for the worker and reaper commands: text lines or one JSON object per line, and
verbosity.

Verbosity means what it says whatever the project's LOGGING does: ``-v 0`` shows
warnings and errors, ``-v 1`` adds process start and stop (and the reaper's line per pass),
``-v 2`` adds one line per task.
Django's own receivers log two INFO lines per task on ``django.tasks`` (``django_tasks`` with
the backport); through a project's root console handler they would print at every verbosity, so
each command quiets that logger to WARNING unless the project configured it itself, in which case
its choice stands.
"""

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from django.conf import settings

from ..compat import TASKS_LOGGER_NAME

LOGGER_NAME = "django_threadmill"
LEVEL_OF_VERBOSITY = {0: logging.WARNING, 1: logging.INFO}


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON object: time, level, logger, message, pid, thread. The time
    is ISO 8601 in UTC, to the millisecond: a collector reads it as written, and local time
    without its offset read hours off in another zone, or the same hour twice at a DST
    fall-back."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
            "thread": record.threadName,
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


@contextmanager
def logging_configured(log_format: str, verbosity: int) -> Iterator[None]:
    """Configure logging for a command's run (``_configure_logging``), then put back what it
    changed: a caller that goes on (``call_command``, a test) keeps its own logging, not a
    handler writing to the stderr of the call, which it may have replaced or closed since
    (pytest's ``capsys``), nor a ``django_threadmill`` that no longer reaches its root."""
    logger = logging.getLogger(LOGGER_NAME)
    tasks_logger = logging.getLogger(TASKS_LOGGER_NAME)
    handlers, tasks_handlers = list(logger.handlers), list(tasks_logger.handlers)
    formatters = [(handler, handler.formatter) for handler in {*handlers, *console_handlers()}]
    propagate, level, tasks_level = logger.propagate, logger.level, tasks_logger.level
    _configure_logging(log_format, verbosity)
    try:
        yield
    finally:
        for each, kept in ((logger, handlers), (tasks_logger, tasks_handlers)):
            for handler in each.handlers[:]:
                if handler not in kept:
                    each.removeHandler(handler)
                    handler.close()
        for handler, formatter in formatters:
            handler.setFormatter(formatter)
        logger.propagate = propagate
        logger.setLevel(level)
        tasks_logger.setLevel(tasks_level)


def _configure_logging(log_format: str, verbosity: int) -> None:
    """Send ``django_threadmill`` logs to stderr unless the project's LOGGING already does."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(LEVEL_OF_VERBOSITY.get(verbosity, logging.DEBUG))
    if log_format == "json":
        formatter: logging.Formatter = JsonFormatter()
    else:
        formatter = logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s pid=%(process)d %(threadName)s %(message)s"
        )
    if not logger.handlers:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        logger.addHandler(handler)
        logger.propagate = False
    formatted = [*logger.handlers, *(console_handlers() if log_format == "json" else [])]
    for handler in formatted:
        handler.setFormatter(formatter)
    quiet_django_task_lines()


def console_handlers() -> list[logging.Handler]:
    """Return the handlers of every logger that write to this process's stderr or stdout, and
    Python's last resort (what prints when no handler takes a record).

    With ``--log-format json`` they take the command's format too: what they print is the
    command's output, which a collector parses line by line. Left in the project's format,
    Django's failure line with its traceback, or a task's own log line, printed through a
    root console handler as several plain lines, the task's message among them.
    """
    consoles = (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__)
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    found = {
        handler
        for each in loggers
        for handler in getattr(each, "handlers", ())  # a PlaceHolder has none
        if any(getattr(handler, "stream", None) is console for console in consoles)
    }
    return [*found, *([logging.lastResort] if logging.lastResort else [])]


def project_configures(name: str) -> bool:
    """Tell whether the project's LOGGING (or its own code) set up the logger ``name``."""
    configured = getattr(settings, "LOGGING", None) or {}
    logger = logging.getLogger(name)
    return (
        name in configured.get("loggers", {})
        or logger.level != logging.NOTSET
        or bool(logger.handlers)
    )


def quiet_django_task_lines() -> None:
    """Raise Django's task logger to WARNING unless the project configured it, and leave its
    lines to the project's handlers alone.

    Failures (ERROR) still show where the project's handlers print them; our own ``-v 2`` line
    per task replaces Django's two INFO lines, and a disabled level also spares building a log
    record per task nobody reads. With no handler for it anywhere (the Django 5.2 backport's
    ``django_tasks`` is outside the ``django`` logger Django configures), Python's last resort
    printed the failure line, its traceback ending in the task's message as written: a line
    break in it wrote a line that read as the worker's. Our ``Task failed`` line, escaped,
    reports the failure.
    """
    tasks_logger = logging.getLogger(TASKS_LOGGER_NAME)
    if not project_configures(TASKS_LOGGER_NAME):
        tasks_logger.setLevel(logging.WARNING)
    if not tasks_logger.hasHandlers():
        tasks_logger.addHandler(logging.NullHandler())
