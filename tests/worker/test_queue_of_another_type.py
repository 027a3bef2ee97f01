"""A queue whose key is of another type (docs/lifecycle.md, Keys of another type) stops only
itself: a worker serving it beside others runs their tasks, and asks it again now and then.

The whole fetch once failed with it: the other queues' calls in the same pipeline had reserved
and leased their tasks, dropped with the error, so every retried fetch left another batch
reserved by nobody until its lease lapsed.
"""

import logging

import pytest

from testproject.example.tasks import add

from .support import WatchedBroker, idle_prefetcher


def test_the_other_queues_tasks_reach_the_buffer_and_the_bad_queue_waits(
    watched_broker: WatchedBroker, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(3):
        add.enqueue(n, n)
    emails = watched_broker.queue_keys("emails")
    watched_broker.client.set(emails.ready, "another program's value")
    prefetcher = idle_prefetcher(watched_broker, ("default", "emails"))
    caplog.set_level(logging.WARNING, "django_threadmill")

    prefetcher._round()  # the loop's body, run here: the thread is never started

    assert prefetcher.buffer.waiting() == 3
    assert len(caplog.records) == 1  # one warning, naming the queue and the key's problem
    assert "Fetch from a queue failed, the others go on queue=emails" in caplog.text
    assert "wrong kind" in caplog.text
    assert prefetcher._held_back.is_held("emails")  # asked again once its recheck is due
    assert not prefetcher._held_back.is_held("default")
