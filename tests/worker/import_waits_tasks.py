"""A task module whose import first calls ``support.at_task_import``, as a module-level call to
a slow service would wait there: a test sets the call, and drops the module from
``sys.modules`` so that a worker imports it anew."""

from django_threadmill.compat import task

from . import support

support.at_task_import()


@task()
def imported_as_the_stop_came(n: int) -> int:
    """Return ``n``."""
    return n
