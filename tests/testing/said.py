"""What a drain said in its warnings (django_threadmill.testing logs them)."""

import logging

import pytest

LOGGER = "django_threadmill.testing"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Return the messages of the WARNING records the testing helpers logged."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith(LOGGER) and record.levelno == logging.WARNING
    ]
