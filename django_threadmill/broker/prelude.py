"""The part of ``common.lua`` a script is sent with: the definitions it uses, directly or
through another definition, in ``common.lua``'s order (a helper is defined after those it calls).

Redis runs a script's whole body at every call, so each helper sent is a closure built anew
per call: all of them cost every call about 15,000 instructions under callgrind, and finish
uses half of them; sent those alone, a lone finish call costs 122,500 instead of 130,000.
"""

import re

# A definition at the top level: ``local NAME = ...`` or ``local function NAME(...)``.
_DEFINED = re.compile(r"^local (?:function )?(\w+)", re.MULTILINE)


def _blocks(common: str) -> list[tuple[frozenset[str], str]]:
    """Split ``common`` at its blank lines into definitions: the names each block defines and
    its text, comment included. A block of comments alone (a note, the file's header) is left
    out; a block of code that defines nothing at the top level (a function split by a blank
    line) is refused, as it would be left out too."""
    blocks = []
    for block in re.split(r"\n[ \t]*\n", common.strip()):
        names = frozenset(_DEFINED.findall(block))
        if names:
            blocks.append((names, block))
        elif not all(line.startswith("--") for line in block.splitlines()):
            raise ValueError(f"common.lua has code outside a definition: {block[:60]!r}")
    return blocks


def _uses(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def prelude(common: str, script: str) -> str:
    """Return the definitions of ``common`` that ``script`` uses, in their order."""
    blocks = _blocks(common)
    wanted: set[int] = set()
    reach = script  # the text whose names are wanted: the script, then each block taken
    grew = True
    while grew:
        grew = False
        for i, (names, block) in enumerate(blocks):
            if i not in wanted and any(_uses(reach, name) for name in names):
                wanted.add(i)
                reach += "\n" + block
                grew = True
    return "".join(block + "\n\n" for i, (_, block) in enumerate(blocks) if i in wanted)
