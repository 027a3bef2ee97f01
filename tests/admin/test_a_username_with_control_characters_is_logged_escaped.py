"""A username is logged with its control characters escaped, as every other field of the audit
and pause lines is: a custom user model or a remote-user login that allows a line break could
otherwise split a line or forge another one."""

import logging

import pytest
from django.contrib.auth.models import User

from django_threadmill.admin import audit
from django_threadmill.backend import ThreadmillTaskBackend

FORGED = "ada\nAdmin purge backend=default queue=default by=mallory in the admin"


def test_the_admin_audit_line_escapes_the_username(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=audit.logger.name)
    audit.record(User(username=FORGED), "cancel", "default", task="t@default", changed=1)
    [message] = [record.getMessage() for record in caplog.records]
    assert "\n" not in message
    assert message.endswith(
        r"by=ada\x0aAdmin purge backend=default queue=default by=mallory in the admin in the admin"
    )


def test_the_resume_line_escapes_its_author(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="django_threadmill.broker.pausing")
    assert backend.broker.pause("default", by=FORGED)
    assert backend.broker.resume("default", by=FORGED)
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2, messages
    assert not any("\n" in message for message in messages), messages
