"""With Redis unreachable, the pages say so (with the fix) instead of failing with a 500."""

import pytest
from django.test import Client, override_settings

from tests.admin.conftest import TASKS_URL, detail_url
from tests.conftest import tasks_setting

DOWN = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.mark.parametrize("url", [TASKS_URL, detail_url("0" * 32 + "@default")])
def test_pages_report_an_unreachable_redis(operator: Client, key_prefix: str, url: str) -> None:
    with override_settings(TASKS=tasks_setting(DOWN, key_prefix)):
        response = operator.get(url)

    assert response.status_code == 503
    page = response.content.decode()
    assert f"Redis at {DOWN} is unreachable" in page
    assert "Start Redis or fix TASKS LOCATION" in page
