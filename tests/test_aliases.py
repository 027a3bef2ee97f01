"""A TASKS alias to its ThreadmillTaskBackend, or an error naming the aliases that would do."""

from importlib.util import find_spec

import pytest
from django.test import override_settings

from django_threadmill.aliases import threadmill_backend
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill
from tests.conftest import tasks_setting

PACKAGE = "django.tasks" if find_spec("django.tasks") else "django_tasks"  # or the backport


@pytest.mark.parametrize(
    ("backend", "named"),
    [
        ("immediate.ImmediateBackend", "an ImmediateBackend"),
        ("dummy.DummyBackend", "a DummyBackend"),
    ],
)
def test_a_backend_of_another_kind_is_named_with_its_article(
    redis_url: str, key_prefix: str, backend: str, named: str
) -> None:
    tasks = {
        **tasks_setting(redis_url, key_prefix),
        "other": {"BACKEND": f"{PACKAGE}.backends.{backend}"},
    }
    with (
        override_settings(TASKS=tasks),
        pytest.raises(
            ImproperlyConfiguredThreadmill,
            match=rf"^TASKS\['other'\] is {named}, not a ThreadmillTaskBackend: it has no "
            r"Redis queues, leases or schedules\. Use an alias of a ThreadmillTaskBackend "
            r"\('default'\)\.$",
        ),
    ):
        threadmill_backend("other")
