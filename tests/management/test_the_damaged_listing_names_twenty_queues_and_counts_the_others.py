"""``threadmill_queue damaged`` finding no damaged record names at most 20 of the queues it read
and counts the others: "No damaged records in default, emails, q00, ... and 8 more."

It named every one: without a queue it reads every queue in QUEUES and every queue Redis knows,
and beside thousands of queues its one line was tens of KB (wording.listed_names). The queues a
Redis Cluster node that does not answer kept it from reading are named the same way
(tests/cluster/primary_down).
"""

from django_threadmill.broker import Broker
from django_threadmill.wording import MAX_LISTED_IDS
from tests.support import output_of

REGISTERED = [f"q{n:02}" for n in range(MAX_LISTED_IDS + 5)]  # registered in Redis alone
READ = sorted(["default", "emails", "reports", *REGISTERED])  # as the listing reads them


def test_no_damaged_record_in_twenty_eight_queues_names_twenty_and_counts_the_others(
    broker: Broker,
) -> None:
    broker.register_queues(REGISTERED)

    said = output_of("threadmill_queue", "damaged")

    named = ", ".join(READ[:MAX_LISTED_IDS])
    assert said == f"No damaged records in {named} and {len(READ) - MAX_LISTED_IDS} more.\n"
