"""A key prefix too long to take the test process's name is refused naming the fix.

Under pytest-xdist or ``manage.py test --parallel`` every key prefix gets the process's name
(``-gw12``, ``-django3``). A prefix the settings accept, 60 of the 64 characters a key prefix
may have, then failed every enqueue and drain of every test with "OPTIONS['key_prefix'] is
'...-gw12'. Use 1-64 letters...": a prefix no setting wrote, and no word of the suffix.
"""

import pytest
from django.test import override_settings
from django.test import runner as django_runner

from django_threadmill.exceptions import ImproperlyConfiguredThreadmill
from django_threadmill.testing import drain, flush
from django_threadmill.testing.isolation import own_key_prefixes
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.support import close_pipelines

MOST = 64  # characters of a key prefix


@pytest.fixture(params=[("gw12", 0), (None, 3)], ids=["pytest-xdist", "django-parallel"])
def process_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test as the parallel test process the parameter names; return its name."""
    xdist, django_worker = request.param
    if xdist is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", xdist)
    monkeypatch.setattr(django_runner, "_worker_id", django_worker)
    return xdist or f"django{django_worker}"


def test_a_prefix_one_character_too_long_is_refused_naming_the_room_left(
    redis_url: str, key_prefix: str, process_name: str
) -> None:
    room = MOST - len(f"-{process_name}")
    long_prefix = key_prefix.ljust(room + 1, "x")
    with (
        override_settings(TASKS=tasks_setting(redis_url, long_prefix)),
        pytest.raises(ImproperlyConfiguredThreadmill) as raised,
        own_key_prefixes(),
    ):
        echo.enqueue(1)
    assert str(raised.value) == (
        f"TASKS['default'] OPTIONS['key_prefix'] {long_prefix!r} ({room + 1} characters) "
        f"leaves no room for the '-{process_name}' this test process adds to it, so that its "
        "keys are apart from those of the test processes running beside it (docs/testing.md, "
        f"Keys are flushed around each test): a key prefix is at most 64 characters. Give the "
        f"tests a key_prefix of {room} characters or fewer."
    )


def test_a_prefix_that_leaves_just_the_room_runs_its_tasks(
    redis_url: str, key_prefix: str, process_name: str
) -> None:
    room = MOST - len(f"-{process_name}")
    just_fits = key_prefix.ljust(room, "x")
    with override_settings(TASKS=tasks_setting(redis_url, just_fits)), own_key_prefixes():
        try:
            result = echo.enqueue(7)
            assert drain() == 1
            result.refresh()
            assert result.return_value == 7
        finally:
            flush()
    close_pipelines(f"{just_fits}-{process_name}")
