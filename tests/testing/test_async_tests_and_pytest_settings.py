"""What a user's tests meet beside the drain: pytest-django's ``settings`` fixture in a parallel
run, and async tests.

Under pytest-xdist, a test asking for ``settings`` before ``threadmill`` and changing any setting
through it left the suffixed TASKS behind for every later test of its process: the fixture's
override was undone first, and ``settings`` then restored what it found when the test changed
it. An async test calling ``drain()`` was told to be a sync test, though
``await sync_to_async(drain)()`` runs it where its tasks see the test's database.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from asgiref.sync import AsyncSingleThreadContext, sync_to_async
from django.contrib.auth.models import Group
from django.test import TestCase

from django_threadmill.compat import TaskResultStatus, task
from django_threadmill.testing import Threadmill, ThreadmillTestMixin, drain

from .test_sample_project import run_sample

# Run in the sample project by one pytest-xdist worker, in this order.
SETTINGS_BESIDE_THE_FIXTURE = """
import os

from django.conf import settings as django_settings

PREFIX = os.environ["SAMPLE_KEY_PREFIX"]


def key_prefix():
    return django_settings.TASKS["default"]["OPTIONS"]["key_prefix"]


def test_changes_a_setting_beside_the_fixture(settings, threadmill):
    settings.DEBUG = True
    assert key_prefix() == f"{PREFIX}-gw0"


def test_sets_tasks_itself_beside_the_fixture(settings, threadmill):
    settings.TASKS = {**settings.TASKS, "other": settings.TASKS["default"]}


def test_a_later_test_has_the_settings_as_written():
    assert key_prefix() == PREFIX
    assert sorted(django_settings.TASKS) == ["default"]
"""


def test_the_fixture_leaves_no_setting_behind_beside_pytest_djangos_settings(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    module = tmp_path / "test_settings_beside_the_fixture.py"
    module.write_text(SETTINGS_BESIDE_THE_FIXTURE)
    output = run_sample(
        redis_url,
        key_prefix,
        *("-m", "pytest", "-c", "pytest.ini", "--rootdir", ".", "-p", "no:cacheprovider"),
        *("-q", "-n", "1", str(module)),
    )
    assert "3 passed" in output, output


@task
def names_a_group(name: str) -> int:
    return Group.objects.create(name=name).pk


@task
async def anames_a_group(name: str) -> int:
    return (await Group.objects.acreate(name=name)).pk


async def test_in_an_async_test_the_refusal_names_the_way_that_works() -> None:
    with pytest.raises(RuntimeError, match=r"await sync_to_async\(drain\)\(\)"):
        drain()


@pytest.fixture
def loop_thread_joined() -> Iterator[None]:
    """Have Django's run of an async test method join the thread of its event loop, which it
    leaves to the garbage collector (the suite's leak check would blame the test)."""
    with AsyncSingleThreadContext():
        yield


@pytest.mark.usefixtures("loop_thread_joined")
class AnAsyncTestMethod(ThreadmillTestMixin, TestCase):
    async def test_drains_through_sync_to_async_in_the_tests_transaction(self) -> None:
        results = [await names_a_group.aenqueue("sync"), await anames_a_group.aenqueue("async")]
        assert await sync_to_async(self.drain)() == 2
        for result in results:
            await result.arefresh()
            assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
        assert [pk async for pk in Group.objects.values_list("pk", flat=True)] == [
            result.return_value for result in results
        ]


@pytest.mark.django_db(transaction=True)
async def test_a_pytest_asyncio_test_drains_through_sync_to_async(threadmill: Threadmill) -> None:
    result = await anames_a_group.aenqueue("async")
    assert await sync_to_async(threadmill.drain)() == 1
    await result.arefresh()
    assert await Group.objects.filter(pk=result.return_value).aexists()
