"""The shapes a workflow is written in: a step, a chain of them, a group with a callback.

Each shape adds its steps to a plan (plan.py); ``enqueue()`` hands it to launch.py, which
plans and stores it.
"""

import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..codec.results import cut_to
from ..compat import Task, TaskResult
from ..enqueue.pipeline import is_call
from .launch import alaunch, launch
from .plan import Input, Plan
from .result import WorkflowResult

# How step(), chain() and group() (then= too) name a WorkflowResult given in place of a shape.
WORKFLOW_ENQUEUED = "That is what a workflow's enqueue() returned"


class Workflow(ABC):
    """What every shape can do: add its steps to a plan, and be enqueued as a whole workflow."""

    @abstractmethod
    def plan_into(self, plan: Plan, given: Input) -> Input:
        """Add this shape's steps, taking ``given`` as input; return where its value is."""

    def enqueue(self) -> WorkflowResult:
        """Store the workflow and enqueue the steps that wait for nothing; return its result."""
        return launch(self)

    async def aenqueue(self) -> WorkflowResult:
        """Async twin of ``enqueue``."""
        return await alaunch(self)

    def __or__(self, other: object) -> "Chain":
        """``a | b`` is ``chain(a, b)``, as Celery writes a chain (docs/workflows.md, The API)."""
        return Chain(_links(self) + _links(other))

    def __ror__(self, other: object) -> "Chain":
        """``other | self``, reached when ``other`` is not a shape: refused, naming the fix."""
        return Chain(_links(other) + _links(self))


# The classes check what they are given, as the functions below build them: built directly
# (they are exported), a group of no members left its callback waiting for good, and a chain
# of no parts failed with IndexError.


@dataclass(frozen=True, slots=True)
class Step(Workflow):
    """One task with its arguments; the task's own ``using()`` options hold."""

    task: Task
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.task, Task):
            raise TypeError(
                f"step() takes a task (a function decorated with @task), not {_shown(self.task)}. "
                f"{_task_hint(self.task)}"
            )
        if not is_call(self.args, self.kwargs):  # a str would be stored as its letters
            raise TypeError(
                f"Step() takes args as a tuple or list and kwargs as a dict, not "
                f"args={_shown(self.args)} and kwargs={_shown(self.kwargs)}. Write "
                "step(task, *args, **kwargs) instead."
            )

    def plan_into(self, plan: Plan, given: Input) -> Input:
        return plan.add_step(self.task, self.args, self.kwargs, given)


@dataclass(frozen=True, slots=True)
class Chain(Workflow):
    """Parts run in order; each part's value is the next part's first positional argument."""

    parts: tuple["Node", ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", _nodes("chain", self.parts))

    def plan_into(self, plan: Plan, given: Input) -> Input:
        for part in self.parts:
            given = part.plan_into(plan, given)
        return given


@dataclass(frozen=True, slots=True)
class Group(Workflow):
    """Members run in parallel; ``then`` runs once after all succeeded, given their values."""

    members: tuple["Node", ...]
    then: Step | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", _nodes("group", self.members))
        if self.then is not None and not isinstance(self.then, Step):
            raise TypeError(
                f"group(then=...) takes one step, not {_shown(self.then)}{_then_hint(self.then)}"
            )

    def plan_into(self, plan: Plan, given: Input) -> Input:
        values: Input = [member.plan_into(plan, given) for member in self.members]
        return values if self.then is None else self.then.plan_into(plan, values)


type Node = Step | Chain | Group


def step(task: Task, /, *args: Any, **kwargs: Any) -> Step:
    """One task with its arguments. In a chain, the previous part's value comes first.

    ``task`` is positional-only, so a task may take a keyword argument named ``task``.
    """
    return Step(task, args, kwargs)


def chain(*parts: Node) -> Chain:
    """Run ``parts`` in order, passing each one's value to the next as its first argument."""
    return Chain(parts)


def group(*members: Node, then: Step | None = None) -> Group:
    """Run ``members`` in parallel; ``then`` (a step) runs once after every member succeeded,
    with the list of their values, in member order, as its first argument."""
    return Group(members, then)


def _nodes(kind: str, given: object) -> tuple[Node, ...]:
    """Return ``given`` as a tuple of at least one step, chain or group; refuse anything else."""
    if not isinstance(given, tuple | list):
        raise TypeError(
            f"{kind.capitalize()}() takes a tuple of steps, chains and groups, not "
            f"{_shown(given)}. Write {kind}(*steps) instead."
        )
    if not given:
        raise ValueError(f"{kind}() needs at least one step: {kind}(step(task), ...).")
    for node in given:
        if not isinstance(node, Step | Chain | Group):
            raise TypeError(
                f"{kind}() takes steps, chains and groups, not {_shown(node)}.{_hint(kind, node)}"
            )
    return tuple(given)


def _links(node: object) -> tuple[Node, ...]:
    """The parts ``node`` brings to a chain written with ``|``: a chain's own parts, so that
    ``chain(a, b) | c`` is ``chain(a, b, c)`` (the same plan as ``chain(chain(a, b), c)``)."""
    if isinstance(node, Chain):
        return node.parts
    if isinstance(node, Step | Group):
        return (node,)
    hint = _hint("chain", node) or " Write step(task, ...) on each side of |."
    raise TypeError(
        f"a | b takes steps, chains and groups on both sides (it is chain(a, b)), not "
        f"{_shown(node)}.{hint}"
    )


def _shown(value: object) -> str:
    """``repr(value)``, cut short: a list of a thousand steps must not fill the message."""
    return cut_to(repr(value), 200)


def _hint(kind: str, node: object) -> str:
    """What to write instead of ``node``, where that is clear."""
    if isinstance(node, Task):
        return " Wrap the task as step(task, ...)."
    if isinstance(node, TaskResult):
        return " That is a task enqueued already: wrap the task itself as step(task, ...)."
    if isinstance(node, WorkflowResult):
        return (
            f" {WORKFLOW_ENQUEUED}: pass the chain or group itself, not its result, or build it "
            "from steps, step(task, ...)."
        )
    if inspect.isroutine(node):
        return " Decorate the function with @task, then wrap the task as step(task, ...)."
    if isinstance(node, list | tuple | Iterator):
        return f" Pass the steps one by one: {kind}(*steps)."
    return ""


def _then_hint(then: object) -> str:
    """What to pass as group(then=...) instead of ``then``, which is no step: a workflow's
    or a task's result was told to wrap it as step(task, ...), which takes a task, not a
    result."""
    if isinstance(then, WorkflowResult):
        return (
            f". {WORKFLOW_ENQUEUED}: pass one step, then=step(task, ...), or "
            "chain(group(...), workflow) to run the workflow itself after the group."
        )
    if isinstance(then, TaskResult):
        return (
            ". That is a task enqueued already: pass the task itself as then=step(task, ...), "
            "not its enqueue()."
        )
    return (
        ": wrap it as then=step(task, ...), or chain(group(...), ...) to run more after the group."
    )


def _task_hint(value: object) -> str:
    """What to pass to step() instead of ``value``, which is no task."""
    if isinstance(value, Step):  # step(step(task)) wraps it twice
        return (
            "That is a step already: use it as it is in chain() or group(), or pass its task: "
            "step(the_step.task, ...)."
        )
    if isinstance(value, Chain | Group):
        kind = type(value).__name__.lower()
        return f"That is a {kind} already: use it as it is in chain() or group()."
    if isinstance(value, WorkflowResult):
        return (
            f"{WORKFLOW_ENQUEUED}: pass a task instead, or the workflow itself to chain() or "
            "group()."
        )
    if isinstance(value, TaskResult):
        return "That is what a task's enqueue() returned: pass the task itself."
    return "Decorate it with @task, or pass the task it returns."
