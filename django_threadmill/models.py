"""Placeholder models: they give the admin its "Threadmill" section and permissions, no tables.

Task data stays in Redis. These unmanaged models exist so Django creates a content type and the
view/change permissions for each page: "view" lets staff look, "change" lets them act.
"""

from django.db import models


class NoRows(models.Manager[models.Model]):
    """Read no rows, without a query: there is no table to read. ``manage.py dumpdata`` reads
    every model, unmanaged ones too, and ``manage.py shell`` imports these."""

    def get_queryset(self) -> models.QuerySet[models.Model]:
        return super().get_queryset().none()


class Queue(models.Model):
    """The queues page: counts, throughput and workers per backend alias and queue."""

    objects = NoRows()

    class Meta:
        managed = False
        base_manager_name = "objects"  # what dumpdata --all reads
        default_permissions = ("view", "change")
        verbose_name = "queue"
        verbose_name_plural = "queues"


class Task(models.Model):
    """The tasks pages: the results list, task detail, requeue and cancel."""

    objects = NoRows()

    class Meta:
        managed = False
        base_manager_name = "objects"  # what dumpdata --all reads
        default_permissions = ("view", "change")
        verbose_name = "task"
        verbose_name_plural = "tasks"
