"""A queue may not be named "." or "..": the admin puts a queue's name in its URLs' paths, and
a browser reads those segments as "here" and "up" before it sends the request, so such a
queue's pause, resume and purge pages could not be reached from a browser."""

import pytest
from django.test import override_settings

from django_threadmill.compat import task_backends
from django_threadmill.conf.settings import check_queue_name
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill
from tests.conftest import tasks_setting


@pytest.mark.parametrize("name", [".", ".."])
def test_a_queue_named_as_a_path_segment_is_refused(name: str) -> None:
    with pytest.raises(ImproperlyConfiguredThreadmill, match=r"other than '\.' or '\.\.'"):
        check_queue_name(name)


@pytest.mark.parametrize("name", ["...", ".hidden", "v1.2", "a..b", "." * 64])
def test_other_names_with_dots_are_taken(name: str) -> None:
    assert check_queue_name(name) == name


def test_such_a_queue_in_queues_is_refused_with_the_backend(
    redis_url: str, key_prefix: str
) -> None:
    setting = tasks_setting(redis_url, key_prefix)
    with (
        override_settings(TASKS={"default": {**setting["default"], "QUEUES": ["default", ".."]}}),
        pytest.raises(ImproperlyConfiguredThreadmill, match=r"Queue name '\.\.' is not valid"),
    ):
        task_backends["default"]
