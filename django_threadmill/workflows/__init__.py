"""Workflows: chains and groups of tasks, each next step enqueued exactly once.

    from django_threadmill.workflows import chain, group, step

    flow = chain(step(fetch, url), group(step(resize, 100), step(resize, 800)), step(publish))
    result = flow.enqueue()

docs/workflows.md has the API, the semantics and why each step runs exactly once.
"""

from .canvas import Chain, Group, Step, chain, group, step
from .result import WorkflowResult, WorkflowStep, aget_workflow, get_workflow

__all__ = [
    "Chain",
    "Group",
    "Step",
    "WorkflowResult",
    "WorkflowStep",
    "aget_workflow",
    "chain",
    "get_workflow",
    "group",
    "step",
]
