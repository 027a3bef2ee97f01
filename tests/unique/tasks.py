"""Unique tasks for the tests, at module level so worker processes import them."""

from datetime import timedelta
from typing import Any

from django_threadmill.task import task

WINDOW = timedelta(minutes=5)


@task(unique_for=WINDOW)
def refresh(account: int, *, full: bool = False) -> int:
    return account


def by_account(args: list[Any], kwargs: dict[str, Any]) -> str:
    return str(args[0])


@task(unique_for=WINDOW, unique_key=by_account)
def refresh_account(account: int, reason: str) -> str:
    return reason


@task(unique_for=WINDOW)
def append_once(log_path: str) -> None:
    """Append a line to ``log_path``, so a test counts runs outside Redis."""
    with open(log_path, "a") as log:
        log.write("ran\n")


def by_path(args: list[Any], kwargs: dict[str, Any]) -> str:
    """The key as a file path decoded with os.fsdecode: a byte that is not UTF-8 is a lone
    surrogate."""
    return str(args[0]).replace("?", "\udcff")


@task(unique_for=WINDOW, unique_key=by_path)
def index_file(path: str) -> str:
    return path


def by_number(args: list[Any], kwargs: dict[str, Any]) -> str:
    """A key function that breaks its contract: it returns an int."""
    return 5  # type: ignore[return-value]


@task(unique_for=WINDOW, unique_key=by_number)
def keyed_by_a_number(value: int) -> int:
    return value


def by_repr(args: list[Any], kwargs: dict[str, Any]) -> str:
    """A key built from the repr of the arguments: it tells {1: "a"} from {"1": "a"}, which a
    worker hands the task alike."""
    return repr([args, kwargs])


@task(unique_for=WINDOW, unique_key=by_repr)
def keyed_by_repr(values: dict[str, str]) -> dict[str, str]:
    return values


def without_reason(args: list[Any], kwargs: dict[str, Any]) -> str:
    """A key that leaves ``reason`` out by popping it from the kwargs it is given."""
    kwargs.pop("reason", None)
    return repr([args, kwargs])


@task(unique_for=WINDOW, unique_key=without_reason)
def sync_account(account: int, reason: str = "") -> str:
    return reason
