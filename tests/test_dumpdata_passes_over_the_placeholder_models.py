"""The admin's placeholder models (``Queue``, ``Task``) have no table. ``manage.py dumpdata``
reads every model of every app, unmanaged ones too, so in a project with
``"django_threadmill"`` installed it failed, "Unable to serialize database: no such table:
django_threadmill_queue", and so did ``Task.objects.all()`` in ``manage.py shell``, which
imports every model."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from django_threadmill.models import Queue, Task


@pytest.mark.parametrize("use_base_manager", [False, True])
def test_dumpdata_passes_over_the_placeholder_models(db: None, use_base_manager: bool) -> None:
    out = StringIO()
    call_command("dumpdata", all=use_base_manager, stdout=out)
    dumped = json.loads(out.getvalue())
    assert dumped  # the project's own rows, read in the same run
    assert not [row for row in dumped if row["model"].startswith("django_threadmill.")]


def test_the_placeholder_models_read_as_empty(db: None) -> None:
    assert list(Task.objects.all()) == []
    assert Queue.objects.count() == 0
