"""The admin's "Threadmill" section: queues, tasks, task detail and actions, read from Redis.

Django's admin autodiscovery imports this package; ``site`` registers the model admins.
"""

from . import site

__all__ = ["site"]
