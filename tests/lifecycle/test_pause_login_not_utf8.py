"""threadmill_queue pause records who paused, whatever bytes the login name holds."""

import os

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from tests.support import output_of


def test_a_login_name_that_is_not_utf8_still_pauses(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Latin-1 login name, as os.environ hands its bytes over: once the pause's SET failed to
    # encode it, and the command died with a UnicodeEncodeError traceback, the queue unpaused.
    monkeypatch.setenv("LOGNAME", os.fsdecode(b"jos\xe9"))

    out = output_of("threadmill_queue", "pause", "emails", "--reason", "deploy")

    assert out.startswith("Paused queue emails of backend default")
    pause = Inspector(backend.broker).paused(["emails"])["emails"]
    assert pause.by.startswith("jos\\udce9@")
    assert pause.by.endswith(" with manage.py threadmill_queue")
    assert pause.reason == "deploy"
    out = output_of("threadmill_queue", "resume", "emails")
    assert out.startswith("Resumed queue emails of backend default")
