"""A report reaches the attempt whose context it carries, and only while that attempt runs."""

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Lease, ProgressReport
from django_threadmill.compat import TaskContext, TaskResult
from django_threadmill.progress import report_progress
from django_threadmill.progress.channels import open_channel
from tests.progress.tasks import plain


class Sink:
    def __init__(self) -> None:
        self.reports: list[ProgressReport] = []

    def put(self, report: ProgressReport) -> None:
        self.reports.append(report)


def lease_of(result: TaskResult, token: str) -> Lease:
    return Lease(task_id=result.id, queue="default", token=token)


def test_a_report_reaches_its_attempt_only_while_it_runs(backend: ThreadmillTaskBackend) -> None:
    attempt = plain.enqueue()
    read_back = backend.get_result(attempt.id)  # the same task, but no attempt's own result
    sink = Sink()
    with open_channel(attempt, lease_of(attempt, "7"), sink):
        report_progress(TaskContext(task_result=attempt), 1, 2)
        report_progress(TaskContext(task_result=read_back), 2, 2)
    report_progress(TaskContext(task_result=attempt), 2, 2)  # over: nobody listens

    assert sink.reports == [ProgressReport(lease=lease_of(attempt, "7"), done=1, total=2, note="")]


def test_an_abandoned_attempt_ending_leaves_its_successors_channel_open(
    backend: ThreadmillTaskBackend,
) -> None:
    abandoned = plain.enqueue()
    successor = backend.get_result(abandoned.id)  # the next attempt of the same task
    sink = Sink()
    first = open_channel(abandoned, lease_of(abandoned, "1"), sink)
    first.__enter__()
    with open_channel(successor, lease_of(successor, "2"), sink):
        first.__exit__(None, None, None)  # --task-timeout's thread returns at last
        report_progress(TaskContext(task_result=abandoned), 1)
        report_progress(TaskContext(task_result=successor), 2)

    assert [(r.lease.token, r.done) for r in sink.reports] == [("2", 2)]
