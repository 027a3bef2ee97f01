"""Log output for the worker command: text lines or one JSON object per line."""

import json
import logging
import sys

LOGGER_NAME = "django_threadmill"
LEVEL_OF_VERBOSITY = {0: logging.WARNING, 1: logging.INFO}


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON object: time, level, logger, message, pid, thread."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
            "thread": record.threadName,
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(log_format: str, verbosity: int) -> None:
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
        handler = logging.StreamHandler(sys.stderr)
        logger.addHandler(handler)
        logger.propagate = False
    for handler in logger.handlers:
        handler.setFormatter(formatter)
