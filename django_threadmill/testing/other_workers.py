"""Say, in a warning, which worker processes serve the queues a test's flush is about to empty
(docs/testing.md, Keys are flushed around each test): a ``threadmill_worker`` left running on
the development settings took the test's tasks, ran them on its own database, and the drain
returned 0 without a word.
"""

import logging
import os
import socket

from django.core.exceptions import ImproperlyConfigured

from ..aliases import threadmill_aliases, threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..broker.inspect.inspector import Inspector
from ..broker.inspect.types import WorkerSighting
from ..codec.ids import worker_host_and_pid
from ..conf.topology import masked_location
from ..exceptions import BrokerUnavailable
from ..wording import listed_names

logger = logging.getLogger(__name__)

# Per Redis, key prefix and alias: each worker seen, by its latest sighting.
# A flush deletes the sightings, and a worker renews only every lease_ttl / 3: remembered, it is
# named for every test until its lease would lapse, not only for the first after it renewed.
_seen: dict[tuple[str, str, str], dict[str, WorkerSighting]] = {}


def say_other_workers() -> None:
    """Warn, per ThreadmillTaskBackend alias, about the worker processes other than this one
    that renewed leases in its queues within lease_ttl. Three reads per alias: the Redis
    clock, the queue names and the sightings; a Redis that cannot answer is left to the flush."""
    for alias in threadmill_aliases():
        try:
            backend = threadmill_backend(alias)
            others = _other_live_workers(backend)
        except (BrokerUnavailable, ImproperlyConfigured):
            continue
        if not others:
            continue
        logger.warning(
            "A worker process serves the queues of TASKS[%r] (key_prefix %r at %s) that this "
            "test's flush empties: %s renewed %s leases there within lease_ttl. Such a worker (a "
            "threadmill_worker left running on the development settings) takes the test's "
            "tasks, so drain() does not run them, runs them on its own database, and loses its "
            "queues to the flush. Give the tests a key_prefix of their own "
            "(OPTIONS['key_prefix'] in the test settings) or a Redis of their own, or stop that "
            "worker.",
            alias,
            backend.settings.key_prefix,
            masked_location(backend.settings.location),
            listed_names(others),
            "its" if len(others) == 1 else "their",
        )


def _other_live_workers(backend: ThreadmillTaskBackend) -> list[str]:
    """Return the ids of the processes but this one renewed within lease_ttl in ``backend``'s
    queues, most recent first, those seen before this read too: this process's drains renew
    under ids of its own."""
    broker, settings = backend.broker, backend.settings
    own = (socket.gethostname(), str(os.getpid()))
    now_ms = broker.server_time_ms()
    lease_ms = settings.lease_ttl_ms
    sightings = Inspector(broker).workers(
        broker.queues(backend.queues), counts=False, live_from_ms=now_ms - lease_ms
    )
    place = (settings.location, settings.key_prefix, backend.alias)
    seen = _seen.pop(place, {})
    for sighting in sightings:
        known = seen.get(sighting.worker_id)
        if worker_host_and_pid(sighting.worker_id) != own and (
            known is None or sighting.last_renewal_ms > known.last_renewal_ms
        ):
            seen[sighting.worker_id] = sighting
    # Kept only while some are live, so a key prefix per test adds none.
    live = {worker_id: s for worker_id, s in seen.items() if s.live(now_ms, lease_ms)}
    if live:
        _seen[place] = live
    return sorted(live, key=lambda worker_id: live[worker_id].last_renewal_ms, reverse=True)
