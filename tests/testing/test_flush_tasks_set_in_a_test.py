"""The keys of a TASKS a test sets itself (a method's override_settings, pytest-django's
``settings``) are flushed when it ends, by the ``threadmill`` fixture and ThreadmillTestMixin.

Only the TASKS in force before and after the test were flushed, and the test's own had ended by
then: what it left queued stayed, and the next test under the same TASKS ran it in its drain. A
TASKS naming a Redis that is gone on purpose is skipped, not failed.

Two tests in a row, in a pytest-django session and under ``manage.py test``, run in a
subprocess as a project's suite would be.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import redis

from tests.servers.redis_server import free_port
from tests.support import ROOT

OVERRIDE = """
import os

from django.test import override_settings

from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo


def tasks_at(location):
    return {
        "default": {
            "BACKEND": "django_threadmill.backend.ThreadmillTaskBackend",
            "LOCATION": location,
            "QUEUES": ["default"],
            "OPTIONS": {"key_prefix": os.environ["OTHER_PREFIX"]},
        }
    }


OTHER = tasks_at(os.environ["REDIS_URL"])
GONE = tasks_at(os.environ["GONE_URL"])
"""

WITH_PYTEST = (
    OVERRIDE
    + """
import pytest


def test_1_leaves_a_task_under_override_settings(threadmill):
    with override_settings(TASKS=OTHER):
        echo.enqueue("first")


def test_2_runs_only_its_own_under_override_settings(threadmill):
    with override_settings(TASKS=OTHER):
        echo.enqueue("second")
        assert threadmill.drain() == 1


def test_3_leaves_a_task_under_the_settings_fixture(threadmill, settings):
    settings.TASKS = OTHER
    echo.enqueue("first")


def test_4_runs_only_its_own_under_the_settings_fixture(threadmill, settings):
    settings.TASKS = OTHER
    echo.enqueue("second")
    assert threadmill.drain() == 1


def test_5_a_redis_gone_on_purpose(threadmill):
    with override_settings(TASKS=GONE), pytest.raises(BrokerUnavailable):
        echo.enqueue("lost")
"""
)

WITH_TESTCASE = (
    OVERRIDE
    + """
from django.test import SimpleTestCase

from django_threadmill.testing import ThreadmillTestMixin


class TasksSetInATest(ThreadmillTestMixin, SimpleTestCase):
    @override_settings(TASKS=OTHER)
    def test_1_leaves_a_task(self):
        echo.enqueue("first")

    @override_settings(TASKS=OTHER)
    def test_2_runs_only_its_own(self):
        echo.enqueue("second")
        self.assertEqual(self.drain(), 1)

    @override_settings(TASKS=GONE)
    def test_3_a_redis_gone_on_purpose(self):
        with self.assertRaises(BrokerUnavailable):
            echo.enqueue("lost")
"""
)


def run_suite(tmp_path: Path, source: str, redis_url: str, key_prefix: str, *command: str) -> str:
    """Run ``command`` from the checkout on the test module ``source``; fail with its output
    unless it passed."""
    (tmp_path / "tasks_set_in_a_test.py").write_text(source)
    env = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    env |= {
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "REDIS_URL": redis_url,
        "THREADMILL_KEY_PREFIX": key_prefix,
        "OTHER_PREFIX": f"{key_prefix}-other",
        "GONE_URL": f"redis://127.0.0.1:{free_port()}/0",
    }
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def test_the_fixture_flushes_a_tasks_set_in_the_test(
    tmp_path: Path, redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\ndjango_find_project = false\nfilterwarnings = error\naddopts = -p no:asyncio\n"
    )
    output = run_suite(
        tmp_path,
        WITH_PYTEST,
        redis_url,
        key_prefix,
        *("-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path)),
        str(tmp_path / "tasks_set_in_a_test.py"),
    )
    assert re.search(r"\b5 passed\b", output), output
    assert redis_client.keys(f"{key_prefix}-other:*") == []


def test_the_mixin_flushes_a_tasks_set_in_the_test(
    tmp_path: Path, redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    output = run_suite(
        tmp_path, WITH_TESTCASE, redis_url, key_prefix, "manage.py", "test", "tasks_set_in_a_test"
    )
    assert "Ran 3 tests" in output, output
    assert redis_client.keys(f"{key_prefix}-other:*") == []
