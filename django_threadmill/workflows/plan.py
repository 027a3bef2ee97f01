"""A workflow flattened into numbered steps, each knowing where its first argument comes from.

A step's *input* is ``None`` (it takes only the arguments given to ``step()``), a step index
(that step's return value) or a list of inputs (a group's values, in member order). The steps
whose values make a step's input are the ones it waits for; nothing else orders steps, so
chains and groups compose to any depth and the Redis side needs only these lists.
"""

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..broker.types import stored_int
from ..codec.calls import call_misfit
from ..codec.ids import make_task_id
from ..codec.times import to_ms
from ..compat import Task
from ..exceptions import PayloadError

type Input = int | list["Input"] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedStep:
    """One step as stored in the workflow's plan."""

    index: int
    path: str  # the task's module path
    queue: str
    priority: int
    run_after_ms: int | None
    args: list[Any]
    kwargs: dict[str, Any]
    input: Input

    def waits_for(self) -> list[int]:
        """The steps whose values make this step's input, in input order."""
        return list(_leaves(self.input))

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "queue": self.queue,
            "priority": self.priority,
            "run_after_ms": self.run_after_ms,
            "args": self.args,
            "kwargs": self.kwargs,
            "input": self.input,
        }

    @classmethod
    def from_json(cls, index: int, data: dict[str, Any]) -> "PlannedStep":
        return cls(index=index, **data)


class Plannable(Protocol):
    """A workflow shape (canvas.py): it adds its steps to a plan."""

    def plan_into(self, plan: "Plan", given: Input) -> Input:
        """Add this shape's steps with ``given`` as their input; return where its value
        comes from."""
        ...


@dataclass(slots=True)
class Plan:
    """The steps of a workflow in order, and the task of each."""

    steps: list[PlannedStep] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)

    def add_step(
        self, task: Task, args: tuple[Any, ...], kwargs: dict[str, Any], given: Input
    ) -> int:
        """Add one step taking ``given`` as its input; return its index."""
        _check_call(task, len(self.steps), args, kwargs, takes_input=given is not None)
        self.steps.append(
            PlannedStep(
                index=len(self.steps),
                path=task.module_path,
                queue=task.queue_name,
                priority=int(task.priority),  # Django accepts 5.0; a stored priority is an int
                run_after_ms=None if task.run_after is None else to_ms(task.run_after),
                args=list(args),
                kwargs=dict(kwargs),
                input=given,
            )
        )
        self.tasks.append(task)
        return len(self.steps) - 1


# What a step's task is called with, and the fix when it cannot take it, by whether the step
# takes an input (the value of the part before it).
_CALLED_WITH = {
    True: (
        "the value of the part before it as its first argument, then the arguments given to step()",
        "Make its function take that value first (and ignore it if it needs none), or enqueue "
        "it outside the workflow.",
    ),
    False: ("the arguments given to step()", "Pass step() the arguments its function takes."),
}


def _check_call(
    task: Task, index: int, args: tuple[Any, ...], kwargs: dict[str, Any], *, takes_input: bool
) -> None:
    """Refuse step ``index`` if its task's function cannot be called with its arguments.

    Unchecked, it fails only when it runs, after the steps before it, and for a step given
    nothing with Python's "takes 0 positional arguments but 1 was given": the input goes unsaid.
    """
    misfit = call_misfit(task, args, kwargs, leading=int(takes_input))
    if misfit:
        gets, fix = _CALLED_WITH[takes_input]
        raise TypeError(
            f"Task {task.module_path!r} cannot be step {index} of this workflow: it gets "
            f"{gets} ({misfit}). {fix}"
        )


def plan(root: Plannable) -> Plan:
    """Number the steps of ``root`` depth first, the members of a group in order."""
    planned = Plan()
    root.plan_into(planned, None)
    return planned


def input_value(step: PlannedStep, values: dict[int, Any]) -> Any:
    """Build ``step``'s input from the return values of the steps it waits for."""

    def build(source: Input) -> Any:
        return values[source] if isinstance(source, int) else [build(s) for s in source or []]

    return build(step.input)


def step_task_id(workflow_id: str, step: PlannedStep) -> str:
    """Return the fixed task id of a step: any drainer that enqueues it uses this same id."""
    digest = hashlib.blake2b(f"{workflow_id}:{step.index}".encode(), digest_size=16).hexdigest()
    return make_task_id(digest, step.queue)


def step_field(index: int) -> str:
    """The field of a workflow's hash that holds step ``index`` as JSON: one per step, so
    enqueueing a step reads that step, not the whole plan (docs/workflows.md, What it costs)."""
    return f"p:{index}"


def workflow_fields(steps: list[PlannedStep], trace: str | None = None) -> dict[str, str | int]:
    """The fields of a new workflow's hash (broker/workflows.py lists them); ``trace`` is the
    launch span's context, kept only when there is one."""
    fields: dict[str, str | int] = {"n": len(steps), "status": "open", "succeeded": 0}
    if trace:
        fields["trace"] = trace
    dependents: dict[int, list[int]] = {}
    for step in steps:
        fields[step_field(step.index)] = json.dumps(step.as_json(), separators=(",", ":"))
        after = step.waits_for()
        if after:
            fields[f"after:{step.index}"] = ",".join(map(str, after))
        for index in after:
            dependents.setdefault(index, []).append(step.index)
    for index, later in dependents.items():
        fields[f"next:{index}"] = ",".join(map(str, dict.fromkeys(later)))
    return fields


def value_field(index: int) -> str:
    """The field of a workflow's hash that holds step ``index``'s return value as JSON, written
    by advance.lua once the step succeeded."""
    return f"v:{index}"


def stored_step(workflow_id: str, index: int, stored: str | None) -> PlannedStep:
    """Read step ``index`` of a workflow back from its field (``step_field``); PayloadError
    when the field is missing or holds no step."""
    try:
        return PlannedStep.from_json(index, json.loads(stored or ""))
    except (TypeError, ValueError) as exc:  # not JSON, or not a step's fields
        raise _damaged(workflow_id, f"Step {index}", f"a stored step ({exc})") from exc


def stored_value(workflow_id: str, index: int, stored: str | None) -> Any:
    """Read step ``index``'s return value back from its field (``value_field``); PayloadError
    when the field is missing or not JSON."""
    try:
        return json.loads(stored or "")
    except ValueError as exc:
        raise _damaged(workflow_id, f"The value of step {index}", f"JSON ({exc})") from exc


def _damaged(workflow_id: str, field: str, wanted: str) -> PayloadError:
    return PayloadError(
        f"{field} of workflow {workflow_id!r} is missing or is not {wanted}; something other "
        "than django-threadmill wrote the workflow's hash."
    )


def lacks(workflow_id: str, what: str) -> PayloadError:
    """The error for a workflow's hash without ``what`` (its status, its step count)."""
    return PayloadError(
        f"Workflow {workflow_id!r} has no {what}; something other than django-threadmill wrote "
        "its hash."
    )


def stored_plan(workflow_id: str, fields: dict[str, str]) -> list[PlannedStep]:
    """Read every step back from a workflow's whole hash; PayloadError when it holds no plan."""
    count = stored_int(fields.get("n"))
    if count is None:
        raise lacks(workflow_id, f"step count (n={fields.get('n', '')!r})")
    return [stored_step(workflow_id, i, fields.get(step_field(i))) for i in range(count)]


def _leaves(source: Input) -> Iterator[int]:
    if isinstance(source, int):
        yield source
    elif source is not None:
        for part in source:
            yield from _leaves(part)
