"""A queue name no queue can have, given to a backend whose ``QUEUES`` lists its queues, is
refused by threadmill's check, cut short and naming the rule, not by Django's.

Django's own check ran first: ``Queue '<the whole name>' is not valid for backend.`` echoed a
name of 10,000 characters whole and did not say what a name may be; threadmill's, which does
both, was reached only with an empty ``QUEUES``. A valid name QUEUES does not list still gets
Django's words, as django.tasks' own backends say them.
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import InvalidTask
from testproject.example.tasks import echo

RULE = (
    "is not valid for ThreadmillTaskBackend. Use 1-64 letters, digits, '_', '.' or '-', other "
    "than '.' or '..' (URLs read those as paths)."
)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("q" * 10_000, f"'{'q' * 47}...{'q' * 48}'"),
        ("q" * 65, f"'{'q' * 65}'"),
        ("has space", "'has space'"),
        (["default"], "['default']"),
    ],
    ids=["10,000 characters", "65 characters", "a space", "a list"],
)
def test_a_name_no_queue_can_have_is_refused_with_the_rule(
    backend: ThreadmillTaskBackend, name: object, shown: str
) -> None:
    assert backend.queues == {"default", "emails", "reports"}
    with pytest.raises(InvalidTask) as refused:
        echo.using(queue_name=name)  # type: ignore[arg-type]

    assert str(refused.value) == f"Queue name {shown} {RULE}"


def test_a_valid_name_outside_queues_still_gets_djangos_words(
    backend: ThreadmillTaskBackend,
) -> None:
    with pytest.raises(InvalidTask) as refused:
        echo.using(queue_name="q" * 64)

    assert str(refused.value) == f"Queue '{'q' * 64}' is not valid for backend."
