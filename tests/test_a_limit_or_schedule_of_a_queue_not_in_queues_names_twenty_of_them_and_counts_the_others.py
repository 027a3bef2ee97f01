"""``queue_limits`` or a schedule's ``queue_name`` naming a queue not in QUEUES is an error
naming at most 20 of the queues in QUEUES and counting the others: "... which is not in QUEUES
(q0000, ..., q0019 and 980 more)".

Each such error named every one: with thousands of queues (one per tenant), a misspelt queue
made ``manage.py check``, and every command's checks, print errors of tens of KB each
(wording.listed_names).
"""

import pytest
from django.test import override_settings

from django_threadmill.compat import task_backends
from django_threadmill.wording import MAX_LISTED_IDS

from .conftest import tasks_setting

QUEUES = [f"q{n:04}" for n in range(1_000)]  # sorted, as the errors list them
MISSPELT = "emials"
REPORT = "tests.schedules.tasks.report"
# Each option naming MISSPELT, the id of its error, and its error with the queues at {}.
ERRORS: dict[str, tuple[dict[str, object], str, str]] = {
    "queue_limits": (
        {"queue_limits": {MISSPELT: {"concurrency": 2}}},
        "threadmill.E008",
        "TASKS['default']: OPTIONS['queue_limits'] names queue 'emials', which is not in QUEUES "
        "({}), so its limits apply to no task.",
    ),
    "schedules": (
        {"schedules": {"s": {"task": REPORT, "every": 60, "queue_name": MISSPELT}}},
        "threadmill.E012",
        "TASKS['default']['OPTIONS']['schedules']['s']: queue_name 'emials' is not in QUEUES "
        "({}), so no task can be enqueued to it.",
    ),
}


@pytest.mark.parametrize("option", ERRORS)
@pytest.mark.parametrize(
    ("queues", "named"),
    [
        (QUEUES, f"{', '.join(QUEUES[:MAX_LISTED_IDS])} and 980 more"),
        (["reports", "emails", "default"], "default, emails and reports"),
    ],
    ids=["a thousand queues", "three queues"],
)
def test_a_queue_not_in_queues_is_refused_naming_twenty_of_them_and_counting_the_others(
    redis_url: str, key_prefix: str, option: str, queues: list[str], named: str
) -> None:
    options, check_id, error = ERRORS[option]
    tasks = tasks_setting(redis_url, key_prefix, **options)
    tasks["default"]["QUEUES"] = queues  # type: ignore[index]

    with override_settings(TASKS=tasks):
        [message] = task_backends["default"].check()

    assert (message.id, message.msg) == (check_id, error.format(named))
