"""Say, in a warning, which other ThreadmillTaskBackend aliases hold tasks after a drain that
ran nothing (docs/testing.md, What a drain leaves): a test that enqueued to another alias
(``task.using(backend="bulk")``, a task whose ``backend`` is another) and drained the default
one got 0 and no word why. Each alias's own keys hold its tasks: no drain of one runs another's.
"""

import logging

from django.core.exceptions import ImproperlyConfigured

from ..aliases import threadmill_aliases, threadmill_backend
from ..broker.inspect.inspector import Inspector
from ..exceptions import BrokerUnavailable

logger = logging.getLogger(__name__)


def say_other_aliases(drained: str) -> None:
    """Warn about each ThreadmillTaskBackend alias but ``drained`` that holds waiting tasks:
    how many, in which queues, and the drain that runs them. Two reads per alias."""
    for alias in threadmill_aliases():
        if alias == drained:
            continue
        holding = _holding(alias)
        if not holding:
            continue
        left = sum(holding.values())
        logger.warning(
            "drain() returned 0 from the backend %r, and the backend %r holds %d task%s in the "
            "queues %s: each TASKS alias keeps its tasks apart, and a drain runs one alias's. "
            "Tasks enqueued with .using(backend=%r), or by a task whose backend is %r, run with "
            "drain(backend=%r).",
            drained,
            alias,
            left,
            "" if left == 1 else "s",
            sorted(holding),
            alias,
            alias,
            alias,
        )


def _holding(alias: str) -> dict[str, int]:
    """Return the queues of ``alias`` holding waiting tasks, with how many; none when its
    Redis does not answer or its settings cannot work (the warning is a hint, not a check)."""
    try:
        backend = threadmill_backend(alias)
        return Inspector(backend.broker).holding(backend.broker.queues(backend.queues))
    except (BrokerUnavailable, ImproperlyConfigured):
        return {}
