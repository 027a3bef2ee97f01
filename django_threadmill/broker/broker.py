"""The Broker: the only object that sends commands to Redis.

Every state change is one Lua script on one queue (docs/design.md, Fenced transitions). A batch that
spans queues is one pipeline of per-queue script calls, so it still costs one round trip on a single
Redis. The class is joined from one part per section, each in its own module.
"""

from .acquisition import Acquiring
from .damaged import DamagedRecords
from .enqueue import Enqueueing
from .layouts import Layouts
from .lifecycle import Lifecycle
from .metrics_sending import MetricsSending
from .pausing import Pausing
from .reads import Reads
from .server_identity import ServerIdentity
from .transitions import Transitions
from .workflows import Workflows


class Broker(
    Enqueueing,
    Workflows,
    Pausing,
    Lifecycle,
    DamagedRecords,
    Layouts,
    Reads,
    Acquiring,
    Transitions,
    MetricsSending,
    ServerIdentity,
):
    """Redis access for one backend alias. Thread-safe: redis-py pools its connections."""
