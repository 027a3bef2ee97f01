"""threadmill/metrics checks its own credentials under Django's LoginRequiredMiddleware.

The view takes a bearer token or a staff session itself, but was not exempt from the
middleware: a project that turned it on had every scrape redirected to its login page, the
token's too (Prometheus follows the redirect and fails to parse the login form), and a request
without credentials got that redirect rather than the 401 docs/observability.md promises.
"""

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import Client, override_settings

from tests.admin.conftest import staff_user

URL = "/threadmill/metrics"
TOKEN = "s3cret-token-for-the-scraper"
LOGIN_REQUIRED = "django.contrib.auth.middleware.LoginRequiredMiddleware"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN}


@pytest.fixture(autouse=True)
def login_required() -> Iterator[None]:
    with override_settings(MIDDLEWARE=[*settings.MIDDLEWARE, LOGIN_REQUIRED]):
        yield


def test_a_bearer_token_reads_the_metrics() -> None:
    response = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}"})

    assert response.status_code == 200
    assert b"threadmill_backend_up" in response.content


@pytest.mark.django_db
def test_staff_who_may_see_the_queues_read_the_metrics() -> None:
    client = Client()
    client.force_login(staff_user("watcher", "view_queue"))

    assert client.get(URL).status_code == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({"Authorization": "Bearer not-the-token-at-all"}, 403)],
    ids=["no-credentials", "wrong-token"],
)
def test_other_requests_are_refused_not_redirected(headers: dict[str, str], status: int) -> None:
    assert Client().get(URL, headers=headers).status_code == status
