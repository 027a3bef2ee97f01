"""``call_command("threadmill_worker", "--processes", "0", "--burst")`` (or ``threadmill_reap``)
in a process that goes on, such as a test, puts back the logging it set up, as it puts back its
signal handlers (docs/worker.md, In one process).

In a project whose LOGGING leaves ``django_threadmill`` alone, the command gave that logger a
handler on the stderr of the call and stopped it propagating, for good: a test that captured
the call's output (``capsys``, ``redirect_stderr``) left every later test's line, a drain's
warnings among them, to a closed stream ("--- Logging error ---"), none of them reaching the
root logger's handlers.
"""

import io
import logging
from collections.abc import Iterator
from contextlib import redirect_stderr

import pytest
from django.core.management import call_command

from django_threadmill.compat import TASKS_LOGGER_NAME
from django_threadmill.worker.logs import LOGGER_NAME

COMMANDS = [
    ("threadmill_worker", "--processes", "0", "--burst"),
    ("threadmill_reap", "--once"),
]


def state(logger: logging.Logger) -> tuple[object, ...]:
    return (list(logger.handlers), logger.propagate, logger.level)


@pytest.fixture
def logging_left_alone() -> Iterator[None]:
    """Make the package's and Django's task loggers those of a project whose LOGGING sets
    neither up (the test project's sets up ``django_threadmill``)."""
    loggers = [logging.getLogger(name) for name in (LOGGER_NAME, TASKS_LOGGER_NAME)]
    kept = [state(logger) for logger in loggers]
    for logger in loggers:
        for handler in logger.handlers[:]:
            logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    yield
    for logger, (handlers, propagate, level) in zip(loggers, kept, strict=True):
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.setLevel(level)


@pytest.mark.usefixtures("logging_left_alone")
@pytest.mark.parametrize("command", COMMANDS, ids=[args[0] for args in COMMANDS])
def test_its_lines_go_to_the_calls_stderr_and_later_ones_where_they_went_before(
    command: tuple[str, ...], caplog: pytest.LogCaptureFixture
) -> None:
    package, tasks_logger = logging.getLogger(LOGGER_NAME), logging.getLogger(TASKS_LOGGER_NAME)
    before = [state(package), state(tasks_logger)]
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        call_command(*command)
    stderr.close()  # as pytest's capsys closes its stream once the test ends
    caplog.clear()
    logging.getLogger("django_threadmill.testing").warning("a later test's drain warns")
    assert caplog.messages == ["a later test's drain warns"]
    assert [state(package), state(tasks_logger)] == before
