"""What the tasks call outside the project: the tests replace these with mocks."""

import logging

logger = logging.getLogger(__name__)


def send_receipt(order_id: int) -> None:
    logger.info("Receipt sent order_id=%d", order_id)


def charge_card(amount: int) -> str:
    raise NotImplementedError("This calls the payment provider; tests replace it with a mock.")
