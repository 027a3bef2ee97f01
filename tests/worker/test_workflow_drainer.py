"""The workflow drainer looks at every outbox of its queues every POLL_S, however busy its own
finishes keep it: entries a cancel or a killed process left wait no longer than that."""

from typing import cast

from django_threadmill.broker import Broker
from django_threadmill.broker.outbox import OutboxSignal
from django_threadmill.broker.outbox_looks import OutboxLook
from django_threadmill.worker.workflow_drainer import POLL_S, WorkflowDrainer
from tests.support import HandClock, wait_until


class Outboxes:
    """The part of a broker the drainer reads: its outbox signal, and which outboxes hold
    entries (here always the "other" queue's, filled by a cancel from a web process)."""

    def __init__(self) -> None:
        self.outbox_signal = OutboxSignal()

    def outboxes_of_every_count(self, queues: tuple[str, ...], known: list[str]) -> OutboxLook:
        return OutboxLook(found=["other"], other=[])


def test_a_stream_of_its_own_finishes_does_not_put_off_the_look_at_every_outbox() -> None:
    outboxes, clock = Outboxes(), HandClock(0.0)
    drained: list[str] = []
    crashed: list[bool] = []

    def drain_part(part: str) -> int:
        drained.append(part)
        if part == "default":  # while it drained, another step of its own finished
            clock.now += POLL_S / 4
            outboxes.outbox_signal.note("default")
        return 1

    outboxes.outbox_signal.note("default")
    drainer = WorkflowDrainer(
        cast(Broker, outboxes),
        ("default", "other"),
        drain_part,
        on_drained=lambda: None,
        on_crash=lambda: crashed.append(True),
        clock=clock,
    )
    drainer.start()
    try:
        wait_until(lambda: drained.count("other") >= 2, "a second look at every outbox")
    finally:
        drainer.stop()
        drainer.join()
    assert not crashed


def test_a_winding_down_drainer_drains_its_own_finishes_only() -> None:
    """A stopping process that took other outboxes' entries enqueued steps no one of its
    --burst run was left to run."""
    outboxes, clock = Outboxes(), HandClock(0.0)
    drained: list[str] = []
    drainer = WorkflowDrainer(
        cast(Broker, outboxes),
        ("default", "other"),
        lambda part: drained.append(part) or 1,
        on_drained=lambda: None,
        on_crash=lambda: None,
        clock=clock,
    )
    drainer.start()
    try:
        wait_until(lambda: drained == ["other"], "the look at every outbox at the start")
        drainer.wind_down()
        clock.now += POLL_S  # a look at every outbox is due, and so is one of its own
        outboxes.outbox_signal.note("default")
        wait_until(lambda: "default" in drained, "its own finish drained")
    finally:
        drainer.stop()
        drainer.join()
    assert drained == ["other", "default"]
