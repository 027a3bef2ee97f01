"""Every Lua script opens with its contract, and its body keeps the rules of docs/design.md."""

import re
from importlib.resources import files

import pytest

from django_threadmill.broker.scripts import ScriptName

LUA = files("django_threadmill.broker") / "lua"


def source(name: ScriptName) -> str:
    return (LUA / f"{name}.lua").read_text()


def header(name: ScriptName) -> list[str]:
    """Return the leading comment block of a script."""
    lines = []
    for line in source(name).splitlines():
        if not line.startswith("--"):
            break
        lines.append(line)
    return lines


def body(name: ScriptName) -> str:
    return "\n".join(source(name).splitlines()[len(header(name)) :])


@pytest.mark.parametrize("name", list(ScriptName))
def test_header_states_the_contract(name: ScriptName) -> None:
    lines = header(name)
    assert lines[0].startswith(f"-- {name}.lua: ")
    for section in ("-- Returns:", "-- Fence:", "-- Clock:"):
        assert any(line.startswith(section) for line in lines), f"{name}.lua lacks {section}"


@pytest.mark.parametrize("name", list(ScriptName))
def test_every_key_used_is_documented(name: ScriptName) -> None:
    documented = {int(n) for n in re.findall(r"^-- KEYS\[(\d+)\]", "\n".join(header(name)), re.M)}
    used = {int(n) for n in re.findall(r"KEYS\[(\d+)\]", body(name))}
    assert used == documented
    assert documented == set(range(1, len(documented) + 1))


@pytest.mark.parametrize("name", list(ScriptName))
def test_every_fixed_argument_used_is_documented(name: ScriptName) -> None:
    text = "\n".join(header(name))
    documented = {int(n) for n in re.findall(r"^-- ARGV\[(\d+)\]", text, re.M)}
    used = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", body(name))}  # per-task: ARGV[i + k]
    assert used <= documented, f"{name}.lua uses undocumented ARGV {sorted(used - documented)}"


@pytest.mark.parametrize("name", list(ScriptName))
def test_no_json_no_key_scans_no_client_clock(name: ScriptName) -> None:
    text = body(name)
    assert "cjson" not in text
    assert "cmsgpack" not in text
    assert not re.search(r"""redis\.call\(\s*["'](KEYS|SCAN)["']""", text)
    assert "goto" not in text, "Redis runs Lua 5.1: no goto"
    if "now_ms()" in text or '"TIME"' in text:
        assert any('redis.call("TIME")' in line for line in header(name) if "Clock:" in line)


def test_common_helpers_touch_no_keys() -> None:
    common = (LUA / "common.lua").read_text()
    assert "KEYS[" not in common
    assert "ARGV[" not in common
