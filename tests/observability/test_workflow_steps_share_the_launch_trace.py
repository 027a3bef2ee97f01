"""OpenTelemetry: every step of a workflow is in the trace of the call that launched it.

Run as ``python -m tests.observability.test_workflow_steps_share_the_launch_trace <file>``,
this module is also the probe: with the SDK in memory, it launches a chain and a chord inside
a request span, runs them with a burst worker in this process, and writes one JSON line per
finished span to ``<file>``. A process of its own, as a tracer provider is set once per process.

The later steps, enqueued by the worker's drainer as earlier ones end, carried no context at
all: each ran in a trace of its own, and nothing led from the launch to them.
"""

import json
import sys
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, group, step
from tests.support import run_python
from tests.workflows.tasks import add, collect, number

ADD, COLLECT = add.module_path, collect.module_path
LAUNCH = "enqueue workflow"


def probe(out: Path) -> None:
    """Launch a chain and a chord in a request span, run them with a burst worker, and
    write the workflow ids, then every finished span, to ``out``."""
    from django.core.management import call_command
    from opentelemetry import trace

    from tests.observability.trace_probe import spans_in_memory

    exporter = spans_in_memory()
    with trace.get_tracer("probe").start_as_current_span("request"):
        flows = {
            "chain": chain(step(number, 1), step(add, 2), step(add, 3)).enqueue(),
            "chord": group(step(number, 1), step(number, 2), then=step(collect)).enqueue(),
        }
    call_command("threadmill_worker", "--processes", "0", "--burst")
    lines = [{name: [flow.id, [s.task_id for s in flow.steps]] for name, flow in flows.items()}]
    for span in exporter.get_finished_spans():
        lines.append(
            {
                "name": span.name,
                "trace_id": span.context.trace_id,
                "span_id": span.context.span_id,
                "parent_id": span.parent.span_id if span.parent else None,
                "links": [link.context.span_id for link in span.links],
                "attributes": dict(span.attributes or {}),
            }
        )
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))


def traced(tmp_path: Path, redis_url: str, key_prefix: str) -> tuple[dict, list[dict]]:
    """Run the probe; return its workflows (name: [id, step task ids]) and its spans."""
    out = tmp_path / "spans"
    done = run_python("-m", __name__, str(out), redis_url=redis_url, key_prefix=key_prefix)
    assert done.returncode == 0, done.stderr
    flows, *spans = map(json.loads, out.read_text().splitlines())
    return flows, spans


def test_chain_and_chord_steps_run_in_the_launch_trace(
    tmp_path: Path, redis_url: str, key_prefix: str
) -> None:
    flows, spans = traced(tmp_path, redis_url, key_prefix)
    [request] = [s for s in spans if s["name"] == "request"]
    launches = {
        s["attributes"].get("threadmill.workflow.id"): s for s in spans if s["name"] == LAUNCH
    }
    runs = {s["attributes"]["threadmill.task.id"]: s for s in spans if s["name"].startswith("run ")}
    enqueues = {
        s["attributes"]["threadmill.task.id"]: s
        for s in spans
        if s["name"] in (f"enqueue {ADD}", f"enqueue {COLLECT}")
    }
    for name, (workflow_id, task_ids) in flows.items():
        launch = launches[workflow_id]
        assert launch["parent_id"] == request["span_id"], name
        assert launch["attributes"]["threadmill.task.count"] == 3
        first = task_ids[:1] if name == "chain" else task_ids[:2]
        later = [task_id for task_id in task_ids if task_id not in first]
        for index, task_id in enumerate(task_ids):
            run = runs[task_id]
            assert run["trace_id"] == request["trace_id"], (name, index)
            assert run["links"] == []  # its parent is its enqueue
            assert run["attributes"]["threadmill.workflow.id"] == workflow_id
            assert run["attributes"]["threadmill.workflow.step"] == index
        for task_id in first:
            assert runs[task_id]["parent_id"] == launch["span_id"], name
        for task_id in later:
            enqueue = enqueues[task_id]
            assert runs[task_id]["parent_id"] == enqueue["span_id"], name
            assert enqueue["parent_id"] == launch["span_id"], name
            assert enqueue["trace_id"] == request["trace_id"], name
            assert enqueue["attributes"]["threadmill.workflow.id"] == workflow_id


def test_without_a_trace_nothing_is_stored(backend: ThreadmillTaskBackend) -> None:
    """No tracer provider in this process: the workflow and its steps carry no context."""
    flow = chain(step(number, 1), step(add, 2)).enqueue()
    drain()
    assert "trace" not in backend.broker.workflow_fields(flow.id)
    for task_id in [s.task_id for s in flow.steps]:
        record = backend.broker.record(task_id)
        assert record is not None
        assert '"trace"' not in record["payload"]


if __name__ == "__main__":
    probe(Path(sys.argv[1]))
