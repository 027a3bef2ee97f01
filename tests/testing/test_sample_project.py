"""The sample project under tests/sample_project tests its tasks with the ``threadmill``
fixture (found through the pytest11 entry point, nothing imported by hand) and
ThreadmillTestMixin, under its own settings: run here in a subprocess, with pytest-django and
with Django's own test runner."""

import os
import re
import subprocess
import sys
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from tests.support import ROOT
from tests.worker import tasks

SAMPLE = ROOT / "tests" / "sample_project"
TESTS_PER_LANE = 6  # in each of test_with_pytest.py and test_with_testcase.py


def run_sample(redis_url: str, key_prefix: str, *args: str, test_db: str = "") -> str:
    """Run ``args`` in the sample project's directory; fail with its output unless it passed."""
    # Neither this suite's settings nor its pytest-xdist worker name, which would suffix the
    # sample's key prefix (docs/testing.md, Keys are flushed around each test).
    env = {
        name: value
        for name, value in os.environ.items()
        if name != "DJANGO_SETTINGS_MODULE" and not name.startswith("PYTEST_XDIST_")
    }
    env |= {"REDIS_URL": redis_url, "SAMPLE_KEY_PREFIX": key_prefix, "PYTHONDONTWRITEBYTECODE": "1"}
    if test_db:
        env["SAMPLE_TEST_DB"] = test_db
    done = subprocess.run(
        [sys.executable, *args], cwd=SAMPLE, env=env, capture_output=True, text=True, timeout=100
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def test_the_sample_passes_under_pytest_django_and_leaves_redis_empty(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    # A task the sample cannot import, left in its queue: the first test's drain would count it
    # if the fixture did not flush before.
    tasks.square.enqueue(2)
    # A test database in a file: closing the test's connection after a task, as a worker
    # does, would end its transaction there (an in-memory one ignores the close).
    output = run_sample(
        redis_url,
        key_prefix,
        *("-m", "pytest", "-p", "no:cacheprovider", "-q", "--ds=sample.settings"),
        test_db=str(tmp_path / "test.sqlite3"),
    )
    assert re.search(rf"\b{4 * TESTS_PER_LANE} passed\b", output), output
    assert redis_client.keys(f"{key_prefix}:*") == []


def test_the_sample_testcase_passes_under_manage_py_test(redis_url: str, key_prefix: str) -> None:
    output = run_sample(redis_url, key_prefix, "manage.py", "test", "orders.test_with_testcase")
    assert f"Ran {2 * TESTS_PER_LANE} tests" in output, output
