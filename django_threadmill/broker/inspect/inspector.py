"""The Inspector: read-only queries on the queues of one backend alias, for the admin.

Its queries live one job a module, each a class over ``InspectorBase`` (base.py): the queues
page (queues.py), worker sightings (sightings.py), listings (listing.py) and one task
(detail.py). See the package docstring for the rules every query follows.
"""

from .detail import TaskReads
from .listing import ListingReads
from .queues import QueueReads
from .sightings import SightingReads


class Inspector(QueueReads, SightingReads, ListingReads, TaskReads):
    """Read-only queries on the queues of one backend alias, for the admin."""
