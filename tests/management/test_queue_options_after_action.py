"""manage.py threadmill_queue takes its own options after ACTION too, where users type them."""

import pytest
from django.core.management import CommandError

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from tests.support import output_of


@pytest.mark.parametrize(
    "args",
    [
        ["pause", "emails", "--backend", "nope"],
        ["resume", "emails", "--backend", "nope"],
        ["damaged", "--backend", "nope"],
        ["forget-damaged", "emails", "--all", "--backend", "nope"],
        ["--backend", "nope", "pause", "emails"],
    ],
)
def test_backend_is_read_before_or_after_the_action(args: list[str]) -> None:
    """After ACTION it was "unrecognized arguments: --backend nope": a command naming its
    backend the way every other command takes it could not pause or resume at all."""
    with pytest.raises(CommandError) as raised:
        output_of("threadmill_queue", *args)

    assert str(raised.value).startswith("--backend nope: TASKS has no backend 'nope'.")


def test_django_options_after_the_action_are_taken(backend: ThreadmillTaskBackend) -> None:
    out = output_of(
        "threadmill_queue", "pause", "emails", "--backend", "default", "-v", "0", "--traceback"
    )

    assert out.startswith("Paused queue emails of backend default:")
    assert "emails" in Inspector(backend.broker).paused(["emails"])
