"""For the tests that run a TestCase of their own: running it, and a fixture file of groups whose
rows enqueue a welcome as Django loads them."""

import json
import unittest
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group
from django.db.models.signals import post_save

from . import tasks


def run_case(case: type[unittest.TestCase]) -> None:
    """Run the tests of ``case``; fail naming its errors and failures if any."""
    outcome = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(outcome)
    assert outcome.wasSuccessful(), outcome.errors + outcome.failures


def welcome(sender: type, instance: Group, created: bool, **kwargs: Any) -> None:
    """A project's receiver: each group saved, by a fixture too, enqueues its welcome."""
    if created:
        tasks.record.enqueue(f"welcome {instance.name}")


@contextmanager
def groups_fixture(directory: Path, names: Sequence[str]) -> Iterator[str]:
    """Write a fixture of groups named ``names`` in ``directory`` and connect ``welcome`` for
    the block; yield the fixture's path."""
    path = directory / "groups.json"
    rows = [
        {"model": "auth.group", "pk": pk, "fields": {"name": name}}
        for pk, name in enumerate(names, start=1)
    ]
    path.write_text(json.dumps(rows))
    post_save.connect(welcome, sender=Group)
    try:
        yield str(path)
    finally:
        post_save.disconnect(welcome, sender=Group)
