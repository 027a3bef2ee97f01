"""threadmill_queue takes every queue of ``damaged`` and every id of ``forget-damaged``, those
given after an option too.

argparse read such a list in one run, up to the first option: ``forget-damaged emails t1
--backend default t2`` was refused with "unrecognized arguments: t2", and ``forget-damaged
emails --all t1`` with the same words, not the error naming ids and --all together.
"""

import pytest
from django.core.management import CommandError

from django_threadmill.backend import ThreadmillTaskBackend
from tests.support import output_of


def test_forget_damaged_takes_the_ids_after_an_option(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(CommandError) as raised:
        output_of("threadmill_queue", "forget-damaged", "emails", "t1", "-v", "0", "t2")

    assert str(raised.value).startswith(
        "Forgot 0 damaged record(s) of queue emails; not in its damaged list: t1 and t2."
    )


def test_damaged_lists_the_queues_after_an_option(backend: ThreadmillTaskBackend) -> None:
    out = output_of("threadmill_queue", "damaged", "emails", "--backend", "default", "reports")

    assert out == "No damaged records in emails and reports.\n"


def test_ids_after_all_are_refused_naming_both(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(CommandError) as raised:
        output_of("threadmill_queue", "forget-damaged", "emails", "--all", "t1")

    assert str(raised.value) == (
        "Name the entries to drop (forget-damaged QUEUE ID ...) or pass --all, not both."
    )


def test_neither_ids_nor_all_is_refused_saying_one_is_needed(
    backend: ThreadmillTaskBackend,
) -> None:
    """It said "... or pass --all, not both" where neither was given."""
    with pytest.raises(CommandError) as raised:
        output_of("threadmill_queue", "forget-damaged", "emails")

    assert str(raised.value) == (
        "Name the entries to drop (forget-damaged QUEUE ID ...), or pass --all to drop every one."
    )
