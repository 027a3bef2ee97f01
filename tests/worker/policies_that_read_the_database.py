"""Tasks whose retry policy reads the database, as a policy that asks a model whether to go on
does; at module level so worker processes import them."""

from datetime import timedelta

from django.db import connection

from django_threadmill.retry import RetryContext
from django_threadmill.task import task

ATTEMPTS = 2  # the policy retries the first failure, and lets the second one stand


def asks_the_database(context: RetryContext) -> timedelta | None:
    """Retry at once until ``ATTEMPTS``, after a query: sync code, as every policy is."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return timedelta(0) if context.attempt < ATTEMPTS else None


@task(retry=asks_the_database)
def fails() -> None:
    raise ConnectionError("the service is down")


@task(retry=asks_the_database)
async def afails() -> None:
    raise ConnectionError("the service is down")
