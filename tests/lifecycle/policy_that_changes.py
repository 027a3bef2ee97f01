"""A task whose retry policy answers what the test lines up: at module level, so ``load_task``
imports it."""

from datetime import timedelta

from django_threadmill.retry import RetryContext
from django_threadmill.task import task

# The policy's next answers, in order; None (fail) once they are used up.
ANSWERS: list[timedelta | None] = []


def lined_up(context: RetryContext) -> timedelta | None:
    """Return the next answer the test lined up: a policy reading state that changes (a
    circuit breaker, a quota, a flag)."""
    return ANSWERS.pop(0) if ANSWERS else None


@task(retry=lined_up)
def changes_its_mind() -> None:
    """Carry a policy whose answer may differ from one call to the next."""
