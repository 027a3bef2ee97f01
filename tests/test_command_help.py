"""Every flag of every command the app ships says what it does in --help."""

import argparse
from collections.abc import Iterator

import pytest
from django.core.management import get_commands, load_command_class

APP = "django_threadmill"
# Its own commands; "check" is Django's, whose arguments are Django's.
COMMANDS = sorted(name for name, app in get_commands().items() if app == APP and name != "check")


def actions(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    """Yield (where, action) for every argument, subcommands' own included."""
    for action in parser._actions:  # argparse keeps them here; it has no public list
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((f"{name} {where}", a) for where, a in actions(sub))
        yield "/".join(action.option_strings) or action.dest, action


def test_the_app_ships_its_commands() -> None:
    assert {"threadmill_worker", "threadmill_reap", "threadmill_queue"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_flag_has_help(name: str) -> None:
    parser = load_command_class(APP, name).create_parser("manage.py", name)
    silent = [where for where, action in actions(parser) if not action.help]
    assert silent == [], f"manage.py {name}: no help for {', '.join(silent)}"


@pytest.mark.parametrize("name", COMMANDS)
def test_no_flag_is_a_bare_float(name: str) -> None:
    """A ``type=float`` flag takes NaN past every ``<= 0`` check and infinity into the waits."""
    parser = load_command_class(APP, name).create_parser("manage.py", name)
    bare = [where for where, action in actions(parser) if action.type is float]
    assert bare == [], f"manage.py {name}: {', '.join(bare)} should be type=seconds_option"
