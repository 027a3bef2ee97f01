"""Our commands, run from ``manage.py``, keep what Django's set-up built out of the cyclic
collector's walks (docs/worker.md, What the set-up built)."""

import gc

from django.core.management.base import BaseCommand


class SetUpFrozen(BaseCommand):
    """A command that, run from ``manage.py``, moves every object alive once Django is set up
    (its apps, models and URL patterns, and every module imported: some 80,000 objects) into
    the collector's permanent generation before it parses its options.

    The collector then never walks them again: not at each full collection while the command
    runs, nor in the worker processes it forks (which then keep sharing those pages instead of
    copying them), nor in the interpreter's exit, where walking them took 0.2-0.3 s of a
    worker's or a probe's CPU on a 2-CPU VM. ``call_command`` leaves its caller's collector as
    it was: that process's objects are not ours to keep.
    """

    def run_from_argv(self, argv: list[str]) -> None:
        gc.freeze()
        super().run_from_argv(argv)
