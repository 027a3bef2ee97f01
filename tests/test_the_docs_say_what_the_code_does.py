"""README.md and docs/*.md say what the code does: every test, option, setting, check id and
heading they name, or the code points at, exists, with the defaults they give.

These read files and parsers only: no Redis.
"""

import argparse
import ast
import fnmatch
import functools
import re
from collections.abc import Iterator
from dataclasses import fields
from enum import Enum
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand

from django_threadmill.conf.settings import OPTION_READERS, BackendSettings

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "django_threadmill"
DOCS = {path.name: path for path in sorted((ROOT / "docs").glob("*.md"))}
DOC_FILES = [ROOT / "README.md", *DOCS.values()]
SETTINGS_REFERENCE = ROOT / "README.md"  # its "Settings" table lists every OPTIONS key

APP = "django_threadmill"
# Our commands; "check" is Django's own, with Django's options.
COMMANDS = sorted(name for name, app in get_commands().items() if app == APP and name != "check")
# Where a command's options table is: the doc, and the heading of the section holding it.
OPTION_TABLES = {
    "threadmill_worker": ("worker.md", "The worker: `manage.py threadmill_worker`"),
    "threadmill_reap": ("lifecycle.md", "`manage.py threadmill_reap`"),
    "threadmill_health": ("deploy.md", "Health"),
}
# Commands documented in prose: each option is named in a section that names the command.
PROSE_COMMANDS = {"threadmill_queue", "threadmill_schedules"}
# A default the docs give in words because the parser's differs from host to host.
DEFAULTS_IN_WORDS = {("threadmill_health", "--host"): "`socket.gethostname()`"}
# Paths in the docs that are the reader's project, not this repository.
EXAMPLE_PATHS = {"myapp/tasks.py", "orders/test_with_pytest.py", "orders/test_with_testcase.py"}
# "OPTIONS" dicts in the docs that are another setting's: DATABASES' for PostgreSQL.
OTHER_OPTIONS_KEYS = {"options"}

HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.M)
# A paragraph or list item that opens with a bold title is an anchor too ("**Stopping.** ...").
BOLD_TITLE = re.compile(r"^\s*(?:[-*] |\d+\. )?\*\*(.+?)\*\*", re.M)
FENCE = re.compile(r"^\s*```.*?^\s*```", re.M | re.S)
TABLE_ROW = re.compile(r"^\|(.+)\|\s*$")


@pytest.fixture(autouse=True)
def threadmill_settings() -> None:
    """Replace the suite's TASKS override, so no Redis is started: nothing here connects."""


# --- reading the docs ---------------------------------------------------------------------


def words(text: str) -> str:
    """Return ``text`` on one line, without backticks or double quotes, and no end stop."""
    return re.sub(r"\s+", " ", text.replace("`", "").replace('"', "")).strip().rstrip(".:")


def sections(path: Path) -> dict[str, str]:
    """Return each heading of ``path`` (as written) with the text up to the next heading."""
    parts = re.split(
        r"^#{1,6} (.+?)\s*$", FENCE.sub(without_headings, path.read_text()), flags=re.M
    )
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def without_headings(code_block: re.Match[str]) -> str:
    """Keep a code block's text, but its ``#`` comments no longer read as headings."""
    return re.sub(r"^(\s*)#", r"\1;#", code_block.group(0), flags=re.M)


def anchors(path: Path) -> set[str]:
    """Return what a reference may name in ``path``: its headings and its bold titles."""
    text = FENCE.sub("", path.read_text())
    return {words(found) for found in HEADING.findall(text) + BOLD_TITLE.findall(text)}


def tables(text: str) -> Iterator[list[list[str]]]:
    """Yield each Markdown table in ``text`` as rows of cells, its header first."""
    rows: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if match := TABLE_ROW.match(line.strip()):
            cells = re.split(r"(?<!\\)\|", match.group(1))
            if not set("".join(cells)) <= set("-: "):  # the |---| line
                rows.append([cell.strip().replace("\\|", "|") for cell in cells])
        elif rows:
            yield rows
            rows = []


def option_tables(text: str) -> Iterator[list[list[str]]]:
    """Yield the body of each ``| option | default | meaning |`` table in ``text``."""
    for rows in tables(text):
        if rows[0][:2] == ["option", "default"]:
            yield rows[1:]


# --- 1. tests the docs cite ---------------------------------------------------------------

# A test file: tests/<dirs>/test_x.py, or a bare test_x.py, with ::test_name (a glob) or not.
TEST_REFERENCE = re.compile(
    r"(?<![\w/.-])((?:tests/(?:\w+/)*)?test_\w+\.py|tests/(?:\w+/)*\w+\.py|tests(?:/\w+)+/?)"
    r"(?:::([\w*]+))?"
)
TEST_FILES = sorted((ROOT / "tests").rglob("*.py"))


def cited_test(path: str) -> list[Path]:
    """Return the files a cited test path may mean: itself, or those a bare name names."""
    if "/" in path:
        return [ROOT / path] if (ROOT / path).exists() else []
    return [file for file in TEST_FILES if file.name == path]


def defines(path: Path, pattern: str) -> bool:
    """Say whether ``path`` defines a test function (or class) matching ``pattern``."""
    names = re.findall(r"^\s*(?:async )?(?:def|class) (\w+)", path.read_text(), re.M)
    return bool(fnmatch.filter(names, pattern))


def test_every_test_the_docs_cite_exists() -> None:
    wrong = []
    for doc in DOC_FILES:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for match in TEST_REFERENCE.finditer(line):
                path, function = match.groups()
                where = f"{doc.relative_to(ROOT)}:{number}: {match.group(0)}"
                found = cited_test(path.rstrip("/"))
                if len(found) != 1:
                    wrong.append(f"{where} ({len(found)} files have that path)")
                elif function and not defines(found[0], function):
                    wrong.append(f"{where} ({found[0].relative_to(ROOT)} has no {function})")
    assert wrong == [], "\n".join(wrong)


# --- 2. the management commands' options --------------------------------------------------


def parser_of(name: str) -> argparse.ArgumentParser:
    return load_command_class(APP, name).create_parser("manage.py", name)


def options_of(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """Yield every option of ``parser``, its subcommands' included."""
    for action in parser._actions:  # argparse keeps them here; it has no public list
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from options_of(sub)
        elif action.option_strings:
            yield action


@functools.cache
def djangos_own() -> set[str]:
    """The options every command has from Django (``--settings``, ``-v``, ``--skip-checks``)."""
    parser = BaseCommand().create_parser("manage.py", "base")
    return {flag for action in options_of(parser) for flag in action.option_strings}


def shown_default(action: argparse.Action) -> str | None:
    """Write the parser's default as the docs do: off for a flag, a number bare, a word in
    backticks; or the default its help gives when the command works it out later; else None."""
    if action.const is True and action.default is False:
        return "off"
    if action.default is None:
        given = re.search(r"\(default: ([\d.]+)[;)]", action.help or "")
        return given.group(1) if given else None
    if isinstance(action.default, int | float):
        return f"{action.default:g}"
    return f"`{action.default}`"


def table_of(command: str) -> dict[str, str]:
    """Return each option the command's options table names, with the default it gives."""
    doc, heading = OPTION_TABLES[command]
    section = sections(DOCS[doc])[heading]
    rows = [row for table in option_tables(section) for row in table]
    assert rows, f"docs/{doc}, {heading}: no options table for {command}"
    return {row[0].strip("`").split()[0]: row[1] for row in rows}


def test_every_command_has_an_options_table_or_is_known_to_be_told_in_prose() -> None:
    assert set(COMMANDS) == set(OPTION_TABLES) | PROSE_COMMANDS


def wrong_rows(command: str, documented: dict[str, str]) -> Iterator[str]:
    """Yield each row of the table that names no option of ``command``, or another default."""
    by_flag = {
        flag: action for action in options_of(parser_of(command)) for flag in action.option_strings
    }
    for flag, default in documented.items():
        if flag not in by_flag:
            yield f"{flag}: no such option"
        elif DEFAULTS_IN_WORDS.get((command, flag)) != default:
            shown = shown_default(by_flag[flag])
            if shown is not None and default != shown:
                yield f"{flag}: the docs say {default}, the parser {shown}"


def left_out(command: str, documented: dict[str, str]) -> Iterator[str]:
    """Yield each option of ``command`` the table leaves out, but Django's own (documented by
    Django: ``--settings``, ``--skip-checks`` ...)."""
    for action in options_of(parser_of(command)):
        flags = set(action.option_strings)
        if not flags & (djangos_own() | set(documented)):
            yield f"{'/'.join(sorted(flags))}: not in the table"


@pytest.mark.parametrize("command", sorted(OPTION_TABLES))
def test_an_options_table_gives_the_parsers_options_and_defaults(command: str) -> None:
    documented = table_of(command)
    wrong = [*wrong_rows(command, documented), *left_out(command, documented)]
    doc, heading = OPTION_TABLES[command]
    assert wrong == [], f"docs/{doc}, {heading}, for {command}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("command", sorted(PROSE_COMMANDS))
def test_every_option_of_a_command_without_a_table_is_named_beside_it(command: str) -> None:
    beside = " ".join(
        text for doc in DOC_FILES for text in sections(doc).values() if command in text
    )
    wrong = [
        "/".join(action.option_strings)
        for action in options_of(parser_of(command))
        if not set(action.option_strings) & djangos_own()
        and not any(re.search(rf"{flag}\b", beside) for flag in action.option_strings)
    ]
    assert wrong == [], f"{command}: options no section naming it names: {', '.join(wrong)}"


# --- 3. the OPTIONS of a TASKS entry ------------------------------------------------------

UNITS = {"s": 1, "ms": 0.001, "day": 86400, "days": 86400, "KiB": 1024, "MiB": 1024**2}


def documented_value(text: str) -> object:
    """Read a default as the docs write it: ``none``, a literal in backticks, or a number with
    a unit (``60 s``, ``1 day``, ``64 MiB``)."""
    if text == "none":
        return None
    if literal := re.fullmatch(r"`(.+)`", text):
        return ast.literal_eval(literal.group(1))
    number = re.fullmatch(r"([\d,.]+)(?: (\w+))?", text)
    assert number, f"a default the test cannot read: {text!r}"
    return float(number.group(1).replace(",", "")) * UNITS[number.group(2) or "s"]


def code_default(key: str) -> object:
    """Return the default ``BackendSettings`` gives OPTIONS[key] (kept as ``key`` or ``key_s``)."""
    by_name = {field.name: field for field in fields(BackendSettings)}
    field = by_name.get(key) or by_name[f"{key}_s"]
    factory = field.default_factory
    value = factory() if callable(factory) else field.default
    return value.value if isinstance(value, Enum) else value


def options_tables_rows(path: Path) -> Iterator[tuple[str, str]]:
    """Yield (OPTIONS key, default) for each row of the OPTIONS tables of ``path``."""
    for rows in option_tables(path.read_text()):
        for row in rows:
            names = re.findall(r"`([a-z_]+)`", row[0])
            if row[0].startswith("`-") or not names:
                continue  # a command's options
            yield from zip(names, row[1].split(", ") if len(names) > 1 else [row[1]], strict=True)


def options_dict_keys(text: str) -> Iterator[str]:
    """Yield the top-level keys of each ``"OPTIONS": {...}`` written in ``text``."""
    for start in re.finditer(r'"OPTIONS": \{', text):
        depth, position = 1, start.end()
        while depth and position < len(text):
            if depth == 1 and (key := re.match(r'"(\w+)":', text[position:])):
                yield key.group(1)
            depth += {"{": 1, "}": -1}.get(text[position], 0)
            position += 1


def test_every_options_key_is_in_the_settings_reference() -> None:
    documented = dict(options_tables_rows(SETTINGS_REFERENCE))
    missing = sorted(set(OPTION_READERS) - set(documented))
    assert missing == [], f"{SETTINGS_REFERENCE.name}'s OPTIONS table leaves out {missing}"


def test_every_options_table_gives_the_code_default() -> None:
    wrong = [
        f"{doc.relative_to(ROOT)}: {key}: {default} in the docs, {code_default(key)!r} in the code"
        for doc in DOC_FILES
        for key, default in options_tables_rows(doc)
        if key in OPTION_READERS and documented_value(default) != code_default(key)
    ]
    assert wrong == [], "\n".join(wrong)


def test_every_options_key_the_docs_name_exists() -> None:
    named = {
        (doc.relative_to(ROOT), key)
        for doc in DOC_FILES
        for key in [
            *(key for key, _ in options_tables_rows(doc)),
            *re.findall(r"OPTIONS\[['\"](\w+)['\"]\]", doc.read_text()),
            *options_dict_keys(doc.read_text()),
        ]
    }
    unknown = sorted(
        f"{doc}: {key}" for doc, key in named if key not in set(OPTION_READERS) | OTHER_OPTIONS_KEYS
    )
    assert unknown == [], "\n".join(unknown)


# --- 4. system check ids ------------------------------------------------------------------

CHECK_ID = re.compile(r"\b(?:threadmill\.)?([EW]\d{3})\b")


def ids_in_code() -> set[str]:
    """Return every check id the package writes as a string: those its checks can emit."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and (id_ := re.fullmatch(r"threadmill\.([EW]\d{3})", text)):
                found.add(id_.group(1))
    return found


def ids_in_docs() -> set[str]:
    return {id_ for doc in DOC_FILES for id_ in CHECK_ID.findall(doc.read_text())}


def test_every_check_id_the_docs_name_exists() -> None:
    unknown = sorted(ids_in_docs() - ids_in_code())
    assert unknown == [], f"the docs name check ids no check emits: {unknown}"


def test_every_check_id_the_code_emits_is_documented() -> None:
    unsaid = sorted(ids_in_code() - ids_in_docs())
    assert unsaid == [], f"check ids no doc names: {unsaid}"


# --- 5. references to docs and their headings ---------------------------------------------

# The forms a reference takes, in code comments, docstrings, messages and the docs:
#   docs/<doc>.md                            the doc alone
#   docs/<doc>.md, Heading                   a heading, or a paragraph's bold title, written
#   `docs/<doc>.md`, Heading                 whole or cut short at the end of a word ("Two
#   docs/<doc>.md, "Heading"                 lanes" for "Two lanes: threads for sync ...")
#   docs/<doc>.md, Heading, "Bold title"     a bold title within that heading
#   docs/<doc>.md, Heading: "quoted text"    a sentence quoted from that doc
#   see "Heading"                            within a doc, one of its own headings
#   docs/ <doc>.md                           a docstring that wrapped the path after "docs/"
# The heading may run over lines: comment markers and split string literals are joined first.
# A text after the comma that starts with neither a capital, a quote nor a backtick is prose
# ("docs/benchmarks.md, 1 Dec"), unless it is a heading as written (deploy.md's "systemd").
DOC_REFERENCE = re.compile(r"docs/ ?(\w+\.md)`?(?:, (.{1,160}))?")
SEE = re.compile(r'see "([A-Z][^"]*)"')
QUOTED_AFTER = re.compile(r'^([^"().;]+?)([:,]) "([^"]+)"')
ENDS_REFERENCE = ").;,"
SOURCES = [
    ROOT / "pyproject.toml",
    *(path for path in PACKAGE.rglob("*") if path.suffix in (".py", ".lua", ".html")),
    *(path for path in (ROOT / "tests").rglob("*.py")),
    *(path for path in (ROOT / "scripts").iterdir() if path.is_file()),
]
ANCHORS = {name: anchors(path) for name, path in DOCS.items()}


def one_line(path: Path) -> str:
    """Return ``path``'s text on one line, a comment or string literal split over lines joined."""
    text = path.read_text()
    if path.suffix == ".py":
        text = re.sub(r"([\"'])\s*\n\s*[rbfuRBFU]*([\"'])", "", text)  # "... " "..."
        text = re.sub(r"\n\s*#+ ?", " ", text)
    elif path.suffix == ".lua":
        text = re.sub(r"\n\s*--+ ?", " ", text)
    return re.sub(r"\s+", " ", text)


def shared_start(one: str, other: str) -> int:
    """Return how many characters ``one`` and ``other`` open with alike."""
    shorter = min(len(one), len(other))
    return next((at for at in range(shorter) if one[at] != other[at]), shorter)


def names(reference: str, anchor: str) -> bool:
    """Say whether ``reference`` (the text after the doc's name) opens by naming ``anchor``:
    whole, then a word ends; or cut where the heading's words end and the reference does."""
    cut = shared_start(reference, anchor)
    if cut == len(anchor):
        return cut == len(reference) or not reference[cut].isalnum()
    at_a_word_end = cut > 0 and not anchor[cut].isalnum() and anchor[cut - 1].isalnum()
    return at_a_word_end and (cut == len(reference) or reference[cut] in ENDS_REFERENCE)


def reference_problem(doc: str, after: str | None) -> str | None:
    """Return what is wrong with a reference to ``doc`` followed by ``after``, or None."""
    if doc not in DOCS:
        return "no such doc"
    if after is None:
        return None
    anchors_of = ANCHORS[doc]
    if quoted := QUOTED_AFTER.match(after):
        heading, mark, inner = quoted.groups()
        if any(names(words(heading), anchor) for anchor in anchors_of):
            if mark == "," and words(inner) not in anchors_of:
                return f'no bold title "{inner}"'
            if mark == ":" and words(inner) not in words(DOCS[doc].read_text()):
                return f'no text "{inner}"'
            return None
    if any(names(words(after), anchor) for anchor in anchors_of):
        return None
    return None if not re.match(r"[A-Z`\"']", after) else "no such heading"


def test_every_reference_to_a_doc_names_a_heading_it_has() -> None:
    wrong = []
    for source in [*DOC_FILES, *SOURCES]:
        for match in DOC_REFERENCE.finditer(one_line(source)):
            if problem := reference_problem(*match.groups()):
                wrong.append(f"{source.relative_to(ROOT)}: {match.group(0)[:100]}... ({problem})")
    assert wrong == [], "\n".join(wrong)


def test_every_see_within_a_doc_names_one_of_its_headings() -> None:
    wrong = [
        f"{name}: {match.group(0)}"
        for name, path in DOCS.items()
        for match in SEE.finditer(one_line(path))
        if not any(names(words(match.group(1)), anchor) for anchor in ANCHORS[name])
    ]
    assert wrong == [], "\n".join(wrong)


# A path of the repository: a module, a script, a benchmark's results, a Lua script by name.
REPOSITORY_PATH = re.compile(
    r"(?<![\w/.-])((?:[\w-]+/)+[\w.-]+\.(?:py|lua|html|json|toml|svg|png)|\w+\.lua)\b"
)


def test_every_module_and_script_the_docs_cite_exists() -> None:
    roots = [ROOT, PACKAGE, ROOT / "docs", PACKAGE / "broker", PACKAGE / "broker" / "lua"]
    wrong = [
        f"{doc.relative_to(ROOT)}: {path}"
        for doc in DOC_FILES
        for path in REPOSITORY_PATH.findall(doc.read_text())
        if path not in EXAMPLE_PATHS and not any((where / path).exists() for where in roots)
    ]
    assert wrong == [], "\n".join(wrong)


# A dotted path: a module (a logger's name), a name defined at its top, or a permission.
DOTTED_PATH = re.compile(r"(?<![\w./-])((?:django_threadmill|tests|benchmarks)(?:\.\w+)+)(?!\.?\w)")


def defined_at_top(module: Path) -> set[str]:
    """Return the names ``module`` defines or imports at its top level."""
    found = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {target.id for target in targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return found


def dotted_path_exists(name: str) -> bool:
    """Say whether ``name`` is a module of the repository, or a name at the top of one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        for module in (base.with_suffix(".py"), base / "__init__.py"):
            if module.exists():
                rest = parts[cut:]
                return not rest or (len(rest) == 1 and rest[0] in defined_at_top(module))
    return False


def permissions() -> set[str]:
    """Return the app's permissions as ``user.has_perm`` names them (``app_label.codename``)."""
    return {
        f"{APP}.{action}_{model._meta.model_name}"
        for model in apps.get_app_config(APP).get_models()
        for action in model._meta.default_permissions
    }


def test_every_dotted_path_the_docs_name_exists() -> None:
    wrong = sorted(
        {
            f"{doc.relative_to(ROOT)}: {name}"
            for doc in DOC_FILES
            for name in DOTTED_PATH.findall(doc.read_text())
            if name not in permissions() and not dotted_path_exists(name)
        }
    )
    assert wrong == [], "\n".join(wrong)
