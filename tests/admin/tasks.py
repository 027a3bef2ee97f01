"""Tasks the admin's browser test runs in a real worker (importable by the subprocess)."""

from django_threadmill.compat import TaskContext, task
from django_threadmill.progress import report_progress


@task(takes_context=True)
def flaky_report(context: TaskContext, name: str) -> str:
    """Build a report, then fail to send it on the first attempt and send it on any later one:
    a task worth requeueing, whose progress shows how far each attempt got."""
    report_progress(context, 1, 2, f"report {name!r} built")
    if context.attempt == 1:
        raise ConnectionError(f"report {name!r}: the mail server did not answer")
    report_progress(context, 2, 2, "sent")
    return f"report {name!r} sent on attempt {context.attempt}"
