"""A queue name the backend has not (neither in QUEUES nor one Redis knows) is refused naming at
most 20 of the queues of each kind and counting the others: "Queue 'nope' is not in
TASKS['default']['QUEUES'] (c00, ..., c19 and 5 more) nor one Redis knows (r00, ... and 5
more)"; so is a queue to serve (``--queue``, ``drain(queues=...)``) not in QUEUES.

It named every one: a misspelt queue in the admin, ``threadmill_queue``, ``purge_finished`` or
``threadmill_worker --queue`` beside thousands of queues (one per tenant, or left behind by
renames) raised a message of tens of KB, shown whole on the admin's page
(wording.listed_names).
"""

from collections.abc import Iterator

import pytest
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill
from django_threadmill.wording import MAX_LISTED_IDS
from django_threadmill.worker.options import served_queues
from tests.conftest import tasks_setting
from tests.support import close_pipelines

CONFIGURED = [f"c{n:02}" for n in range(MAX_LISTED_IDS + 5)]  # QUEUES
SEEN = [f"r{n:02}" for n in range(MAX_LISTED_IDS + 5)]  # registered in Redis alone


@pytest.fixture(autouse=True)
def threadmill_settings(redis_url: str, key_prefix: str) -> Iterator[None]:
    """The test's backend with CONFIGURED as its QUEUES."""
    setting = tasks_setting(redis_url, key_prefix)
    setting["default"]["QUEUES"] = CONFIGURED  # type: ignore[index]
    with override_settings(TASKS=setting):
        yield
    close_pipelines(key_prefix)


def named(queues: list[str]) -> str:
    return f"{', '.join(queues[:MAX_LISTED_IDS])} and 5 more"


def test_an_unknown_queue_names_twenty_of_each_kind_and_counts_the_others(
    backend: ThreadmillTaskBackend,
) -> None:
    backend.broker.register_queues(SEEN)

    with pytest.raises(ImproperlyConfiguredThreadmill) as refused:
        backend.purge_finished("nope")

    assert str(refused.value) == (
        f"Queue 'nope' is not in TASKS['default']['QUEUES'] ({named(CONFIGURED)}) nor one "
        f"Redis knows ({named(SEEN)}). Add it there or pick one of those."
    )


def test_a_queue_to_serve_not_in_queues_names_twenty_of_them_and_counts_the_others(
    backend: ThreadmillTaskBackend,
) -> None:
    with pytest.raises(ImproperlyConfiguredThreadmill) as refused:
        served_queues(backend, ["nope"])

    assert str(refused.value) == (
        f"Queue 'nope' is not in TASKS['default']['QUEUES'] ({named(CONFIGURED)}). Add it "
        "there or pick one of those."
    )
