"""The sample's tasks, each as a plain function and as an ``async def``: a project has both."""

import logging

from django_threadmill.compat import TaskContext  # django.tasks' own, on Django 5.2 and 6.x
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task

from . import services
from .models import Order

logger = logging.getLogger(__name__)
RETRY = ExponentialBackoff(base_delay=0.01, max_attempts=3, jitter=0)


@task
def place_order(item: str) -> int:
    order = Order.objects.create(item=item)
    services.send_receipt(order.pk)
    logger.info("Order placed item=%s order_id=%d", item, order.pk)
    return order.pk


@task
async def aplace_order(item: str) -> int:
    order = await Order.objects.acreate(item=item)
    services.send_receipt(order.pk)
    logger.info("Order placed item=%s order_id=%d", item, order.pk)
    return order.pk


@task(takes_context=True, retry=RETRY)
def charge(context: TaskContext, amount: int) -> list[object]:
    return [services.charge_card(amount), context.attempt]


@task(takes_context=True, retry=RETRY)
async def acharge(context: TaskContext, amount: int) -> list[object]:
    return [services.charge_card(amount), context.attempt]
