"""A script is sent with the common.lua definitions it uses, through others too, and no more."""

import re

import pytest

from django_threadmill.broker.prelude import prelude
from django_threadmill.broker.scripts import ScriptName, _lua_file, script_source

COMMON = """-- header: a note alone

-- The clock.
local function clock()
  return 1
end

-- Uses the clock.
local function later(s)
  return clock() + s
end

local UNUSED = 3
"""


def defined(source: str) -> set[str]:
    return set(re.findall(r"^local (?:function )?(\w+)", source, re.MULTILINE))


def test_a_helper_used_through_another_is_sent_before_it_and_an_unused_one_is_not() -> None:
    sent = prelude(COMMON, "return later(2)")
    assert defined(sent) == {"clock", "later"}
    assert sent.index("function clock") < sent.index("function later")
    assert "header" not in sent


def test_code_outside_a_definition_is_refused() -> None:
    with pytest.raises(ValueError, match="outside a definition"):
        prelude(COMMON + "\nredis.call('PING')\n", "return later(2)")


def test_several_names_defined_in_one_line_are_refused() -> None:
    """Only the first would be found: a script using the second would be sent without it."""
    with pytest.raises(ValueError, match="several names in one line"):
        prelude(COMMON + "\nlocal FIRST, SECOND = 1, 2\n", "return SECOND")


@pytest.mark.parametrize("name", list(ScriptName))
def test_every_helper_a_script_names_is_sent_with_it(name: ScriptName) -> None:
    script = _lua_file(name)
    common_names = defined(_lua_file("common"))
    named = {helper for helper in common_names if re.search(rf"\b{helper}\b", script)}
    assert named <= defined(script_source(name))


def test_finish_is_sent_without_the_helpers_it_does_not_use() -> None:
    assert not {"now_us", "wrong_kind", "holds_unique"} & defined(script_source(ScriptName.FINISH))
