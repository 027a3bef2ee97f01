"""Tasks the admin's browser test runs in a real worker (importable by the subprocess)."""

from django_threadmill.compat import TaskContext, task


@task(takes_context=True)
def flaky_report(context: TaskContext, name: str) -> str:
    """Fail on the first attempt, succeed on any later one: a task worth requeueing."""
    if context.attempt == 1:
        raise ConnectionError(f"report {name!r}: the mail server did not answer")
    return f"report {name!r} sent on attempt {context.attempt}"
