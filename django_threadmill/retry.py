"""Retry policies: when a failed attempt runs again, and after how long.

A task opts in with ``retry=`` (see ``django_threadmill.task``). The worker asks
``retry_delay`` after a failed attempt; the reaper asks the same question when a running
attempt's lease expires, so a lost worker and a raised exception reach one policy.
"""

import logging
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .wording import a_type

if TYPE_CHECKING:
    from .compat import Task, TaskResult

logger = logging.getLogger(__name__)

POLICY_KIND = "exponential_backoff"  # the "kind" written by ExponentialBackoff.to_dict
# The most attempts a task runs, whatever its policy says: every attempt's error is kept and read
# back with each attempt. common.lua's MAX_ATTEMPTS is this number, and a record that counts
# more errors is damaged (docs/lifecycle.md, Retries).
MAX_ATTEMPTS = 1000
# The fields ExponentialBackoff.to_dict() writes besides its "kind", which from_dict reads.
_DICT_FIELDS = ("base_delay_s", "max_delay_s", "factor", "jitter", "max_attempts", "retry_on")
# timedelta.max in seconds: a float, rounded up past it (timedelta(seconds=LONGEST_S) overflows).
LONGEST_S = timedelta.max.total_seconds()


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryContext:
    """What a policy is told about the attempt that just failed."""

    task: "Task"
    task_result: "TaskResult"
    error: BaseException

    @property
    def attempt(self) -> int:
        """The number of attempts so far, the failed one included (1 after the first)."""
        return int(self.task_result.attempts)


type RetryPolicy = Callable[[RetryContext], timedelta | None]


def _as_timedelta(name: str, value: object) -> timedelta:
    if isinstance(value, bool) or not isinstance(value, timedelta | int | float):
        raise TypeError(
            f"ExponentialBackoff({name}={value!r}) is not a duration. Pass a timedelta or a "
            "number of seconds."
        )
    if (value.total_seconds() if isinstance(value, timedelta) else value) < 0:
        raise ValueError(f"ExponentialBackoff({name}={value!r}) is negative. Use 0 or more.")
    return value if isinstance(value, timedelta) else _seconds(name, value)


def _seconds(name: str, value: float) -> timedelta:
    """Return ``value`` seconds as a timedelta, or raise naming ``name``: Python's own errors
    for NaN, infinity or a number past timedelta's range name neither. ``timedelta.max`` in
    seconds, as ``to_dict`` writes it, rounds just past it, and reads back as it."""
    if value == LONGEST_S:
        return timedelta.max
    try:
        return timedelta(seconds=value)
    except (OverflowError, ValueError):
        raise ValueError(
            f"ExponentialBackoff({name}={value!r}) is not a duration a timedelta can hold. Pass "
            f"a finite number of seconds, at most {timedelta.max.days:,} days, or a timedelta."
        ) from None


def _check_number(
    name: str,
    value: object,
    *,
    low: float,
    high: float | None = None,
    whole: bool = False,
    hint: str = "",
) -> None:
    """Raise naming ``name`` unless ``value`` is a number (whole if asked) within bounds."""
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        kind = "a whole number" if whole else "a number"
        raise TypeError(f"ExponentialBackoff({name}={value!r}) must be {kind}.")
    if isinstance(value, float) and not math.isfinite(value):  # NaN passes every bound
        raise ValueError(f"ExponentialBackoff({name}={value!r}) must be a finite number.")
    if value < low or (high is not None and value > high):
        bounds = f"{low:g} or more" if high is None else f"between {low:g} and {high:g}"
        raise ValueError(f"ExponentialBackoff({name}={value!r}) must be {bounds}{hint}.")


def _class_path(kind: type) -> str:
    """Return the path ``from_dict`` finds ``kind`` by; refuse a class it could not find."""
    if "<locals>" in kind.__qualname__:
        raise ValueError(
            f"ExponentialBackoff(retry_on=...) holds {kind.__module__}.{kind.__qualname__}, "
            "defined inside a function, which to_dict() cannot name for from_dict(). Define "
            "the exception class at module level."
        )
    return f"{kind.__module__}.{kind.__qualname__}"


def _imported(path: str) -> object:
    """Return what ``path`` (``<module>.<qualname>``) names: the longest part of it that
    imports as a module, then each name after it as an attribute, so that a class nested in
    another (``Model.DoesNotExist``) is found. ``import_string`` imported all but the last
    name as a module, and failed on every nested class."""
    names = path.split(".")
    for cut in range(len(names) - 1, 0, -1):
        module_path = ".".join(names[:cut])
        try:
            found: object = import_module(module_path)
        except ModuleNotFoundError as exc:
            if exc.name is None or not f"{module_path}.".startswith(f"{exc.name}."):
                raise  # the module exists, and an import of its own failed
            continue
        for name in names[cut:]:
            if not hasattr(found, name):
                break
            found = getattr(found, name)
        else:
            return found
        break
    raise ImportError(
        f"retry_on entry {path!r} names no class that imports. List exception classes by the "
        "path to_dict() writes, e.g. ['builtins.ConnectionError']."
    )


def _exception_class(path: str) -> type[BaseException]:
    found = _imported(path)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        raise ValueError(
            f"retry_on entry {path!r} is not an exception class. List exception classes, "
            "e.g. ['builtins.ConnectionError']."
        )
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class ExponentialBackoff:
    """Retry up to ``max_attempts`` attempts, waiting ``base_delay * factor**(n - 1)``.

    ``n`` counts attempts so far; the wait is capped at ``max_delay`` and spread by
    ``jitter`` (0.1 means up to 10% either way). Only errors that are instances of
    ``retry_on`` are retried; ``SystemExit`` and ``KeyboardInterrupt`` are not, by default.
    """

    base_delay: timedelta = timedelta(seconds=1)
    max_delay: timedelta = timedelta(hours=1)
    factor: float = 2.0
    jitter: float = 0.1
    max_attempts: int = 5
    retry_on: tuple[type[BaseException], ...] = field(default=(Exception,))

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_delay", _as_timedelta("base_delay", self.base_delay))
        object.__setattr__(self, "max_delay", _as_timedelta("max_delay", self.max_delay))
        object.__setattr__(self, "retry_on", self._checked_retry_on())
        if self.max_delay < self.base_delay:
            raise ValueError(
                f"ExponentialBackoff max_delay={self.max_delay} is below base_delay="
                f"{self.base_delay}. Raise max_delay or lower base_delay."
            )
        _check_number("factor", self.factor, low=1)
        _check_number("jitter", self.jitter, low=0, high=1, hint=" (a fraction of the delay)")
        _check_number(
            "max_attempts",
            self.max_attempts,
            low=1,
            high=MAX_ATTEMPTS,
            whole=True,
            hint=f" (1: no retry; {MAX_ATTEMPTS} is the most attempts a task runs)",
        )

    def _checked_retry_on(self) -> tuple[type[BaseException], ...]:
        kinds = self.retry_on if isinstance(self.retry_on, tuple | list) else (self.retry_on,)
        for kind in kinds:
            if not (isinstance(kind, type) and issubclass(kind, BaseException)):
                raise TypeError(
                    f"ExponentialBackoff(retry_on=...) holds {kind!r}, which is not an "
                    "exception class. Pass a tuple of exception classes."
                )
        return tuple(kinds)

    def delay_for(self, attempt: int) -> timedelta:
        """Return the wait after failed attempt number ``attempt`` (1-based), jitter included."""
        try:  # factor ** 0 is 1, even for an int factor no float holds
            growth = float(self.factor) ** (attempt - 1) if attempt > 1 else 1.0
        except OverflowError:  # past a float's range well before MAX_ATTEMPTS (3.0 ** 647)
            growth = math.inf
        seconds = self.base_delay.total_seconds() * growth if self.base_delay else 0.0
        if self.jitter:
            seconds *= 1 + random.uniform(-self.jitter, self.jitter)
        if seconds >= self.max_delay.total_seconds():  # timedelta.max in seconds rounds past it
            return self.max_delay
        return timedelta(seconds=seconds)

    def __call__(self, context: RetryContext) -> timedelta | None:
        """Return the wait before the next attempt, or None when the task should fail."""
        if context.attempt >= self.max_attempts:
            return None
        if not isinstance(context.error, self.retry_on):
            return None
        return self.delay_for(context.attempt)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready description; ``from_dict`` rebuilds an equal policy."""
        return {
            "kind": POLICY_KIND,
            "base_delay_s": self.base_delay.total_seconds(),
            "max_delay_s": self.max_delay.total_seconds(),
            "factor": self.factor,
            "jitter": self.jitter,
            "max_attempts": self.max_attempts,
            "retry_on": [_class_path(kind) for kind in self.retry_on],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExponentialBackoff":
        """Rebuild a policy written by ``to_dict``."""
        if not isinstance(data, dict):
            load = (
                " Load the JSON text first: from_dict(json.loads(text))."
                if isinstance(data, str | bytes)
                else " Pass the dict it wrote."
            )
            raise TypeError(
                f"ExponentialBackoff.from_dict() takes the dict to_dict() wrote, not "
                f"{a_type(data)}.{load}"
            )
        if data.get("kind") != POLICY_KIND:
            raise ValueError(
                f"Retry policy kind {data.get('kind')!r} is not {POLICY_KIND!r}; this dict was "
                "not written by ExponentialBackoff.to_dict()."
            )
        if missing := [name for name in _DICT_FIELDS if name not in data]:
            raise ValueError(
                f"Retry policy dict has no {', '.join(map(repr, missing))}: "
                "ExponentialBackoff.to_dict() writes every field. Pass the dict it wrote, whole."
            )
        return cls(  # the numbers as given: the constructor checks them, naming each
            base_delay=data["base_delay_s"],
            max_delay=data["max_delay_s"],
            factor=data["factor"],
            jitter=data["jitter"],
            max_attempts=data["max_attempts"],
            retry_on=tuple(_exception_class(path) for path in _paths(data["retry_on"])),
        )


def _paths(retry_on: object) -> list[str]:
    """Return the class paths of a dict's ``retry_on``; refuse anything but a list of them: a
    lone path was read letter by letter."""
    if not (isinstance(retry_on, list) and all(isinstance(path, str) for path in retry_on)):
        raise TypeError(
            f"Retry policy dict has retry_on={retry_on!r}, not a list of exception class paths. "
            "Write it as to_dict() does, e.g. ['builtins.ConnectionError']."
        )
    return retry_on


def retry_delay(task: "Task", task_result: "TaskResult", error: BaseException) -> timedelta | None:
    """Return the wait before the next attempt of ``task_result``, or None to record FAILED.

    ``task_result.attempts`` already counts the failed attempt. A policy that raises or
    returns something other than a timedelta or None is logged and treated as "no retry",
    so a broken policy can fail a task but never a worker thread, nor the reaper, which
    asks it too: raising SystemExit, it ended a worker process, then the supervisor at its
    reap pass, silently, and raising another BaseException (CancelledError) it ended the
    reap pass or the worker thread. Only KeyboardInterrupt goes through. The
    ``MAX_ATTEMPTS``th error is final whatever the policy says.
    """
    policy = getattr(task, "retry", None)
    if policy is None:
        return None
    if len(task_result.errors) >= MAX_ATTEMPTS:
        logger.warning(
            "Task failed its %d attempts, the most a task runs; recording FAILED whatever its "
            "retry policy says task_id=%s task=%s",
            MAX_ATTEMPTS,
            task_result.id,
            task.module_path,
        )
        return None
    context = RetryContext(task=task, task_result=task_result, error=error)
    try:
        delay = policy(context)
    except KeyboardInterrupt:  # a Ctrl-C still interrupts (threadmill_reap's main thread)
        raise
    except BaseException:  # a policy's sys.exit(), an async client's CancelledError too
        logger.exception(
            "Retry policy raised task_id=%s task=%s; recording FAILED",
            task_result.id,
            task.module_path,
        )
        return None
    if delay is None:
        return None
    if not isinstance(delay, timedelta):
        logger.error(
            "Retry policy returned %s, not a timedelta or None task_id=%s task=%s; recording "
            "FAILED. Return datetime.timedelta(...) to retry, None to fail.",
            a_type(delay),
            task_result.id,
            task.module_path,
        )
        return None
    return max(delay, timedelta(0))
