"""Placeholder models: they give the admin its "Threadmill" section and permissions, no tables.

Task data stays in Redis. These unmanaged models exist so Django creates a content type and the
view/change permissions for each page: "view" lets staff look, "change" lets them act.
"""

from django.db import models


class Queue(models.Model):
    """The queues page: counts, throughput and workers per backend alias and queue."""

    class Meta:
        managed = False
        default_permissions = ("view", "change")
        verbose_name = "queue"
        verbose_name_plural = "queues"


class Task(models.Model):
    """The tasks pages: the results list, task detail, requeue and cancel."""

    class Meta:
        managed = False
        default_permissions = ("view", "change")
        verbose_name = "task"
        verbose_name_plural = "tasks"
