"""Flush a test's Redis keys (docs/testing.md, Keys are flushed around each test).

Those of every ThreadmillTaskBackend in ``TASKS`` before and after the test, and those a
``TASKS`` the test set itself wrote (a method's ``override_settings``, pytest-django's
``settings``): that override has ended by the test's end, and the next test using it would
otherwise run what this one left queued.
"""

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ..aliases import threadmill_aliases, threadmill_backend
from ..broker import Broker
from ..conf.settings import BackendSettings, waiting_at_most
from ..conf.topology import masked_location
from ..enqueue.pipeline import EnqueuePipeline, pipelines_handed_out, pipelines_sharing
from ..exceptions import BrokerUnavailable
from .other_workers import say_other_workers

logger = logging.getLogger(__name__)

# Seconds the flush of a test's own TASKS waits to connect and for each reply: the Redis it
# names may be gone on purpose (a test of an outage), and is skipped rather than waited for.
LEFT_BEHIND_WAIT_S = 1.0


def flush() -> None:
    """Delete every key of every ThreadmillTaskBackend in TASKS: all under its key_prefix.

    Meant for the Redis a test run uses; a Redis shared with anything else needs a key_prefix
    of the tests' own.
    """
    for alias in threadmill_aliases():
        backend = threadmill_backend(alias)
        backend.broker.flush()
        _forget(backend.settings)


@contextmanager
def flushed_around() -> Iterator[None]:
    """Flush before and after the block, and after it the keys of every other ``TASKS``
    entry whose backend was used inside it, in any thread. Before the first flush, name the
    worker processes serving those keys, which would take the test's tasks."""
    say_other_workers()
    flush()
    try:
        with pipelines_handed_out() as used:
            yield
    finally:  # the set is no longer added to: a thread the test left may still enqueue
        flush()
        _flush_left_behind(used)


def _flush_left_behind(used: Iterable[EnqueuePipeline]) -> None:
    """Flush the keys ``used`` wrote that ``flush`` did not: each location and key prefix
    once, skipping a Redis that does not answer quickly."""
    flushed = {_place(threadmill_backend(alias).settings) for alias in threadmill_aliases()}
    for pipeline in used:
        if _place(pipeline.settings) not in flushed:
            flushed.add(_place(pipeline.settings))
            _flush_if_reachable(pipeline.settings)
            _forget(pipeline.settings)


def _place(settings: BackendSettings) -> tuple[str, str]:
    """Return what a flush deletes the keys of: a Redis and a key prefix, every alias's."""
    return settings.location, settings.key_prefix


def _flush_if_reachable(settings: BackendSettings) -> None:
    broker = Broker(waiting_at_most(settings, LEFT_BEHIND_WAIT_S))
    try:
        broker.flush()
    except BrokerUnavailable as exc:
        logger.debug(
            "Skipped flush of a test's TASKS location=%s key_prefix=%s error=%s",
            masked_location(settings.location),
            settings.key_prefix,
            exc,
        )
    finally:
        broker.close()


def _forget(settings: BackendSettings) -> None:
    """Make every pipeline writing keys under the location and key prefix of ``settings``
    forget what it remembered of them: a test's override with other options or another alias
    (the same key prefix) made one of its own."""
    for pipeline in pipelines_sharing(settings):
        pipeline.broker.forget()
