"""Which modules a task path read from Redis may import: none whose import may run a program.

A stored path is imported to find out whether it names a task, so a forged one could make a
worker (or ``get_result``) import any module on ``sys.path``. Importing most modules only
defines names, but a ``__main__`` module runs its program (``venv.__main__`` makes a virtualenv
from the worker's arguments) and some of the standard library's run code too (``test.autotest``
runs Python's test suite). No task is defined in either, so such a module is never imported.
"""

import importlib.util
import os
import sys
from functools import cache

from ..exceptions import NotATask


@cache
def _python_dirs(*names: str) -> tuple[str, ...]:
    """Return the install paths ``names`` (sysconfig's), each ending in a separator. Read once,
    when first asked: sysconfig takes about 4 ms to import and read, in every process that
    imports the codec (web ones too), for a path that is seldom Python's own."""
    import sysconfig

    return tuple({os.path.join(sysconfig.get_path(name), "") for name in names})


def refuse_unsafe_import(path: str) -> None:
    """Raise NotATask, importing nothing, if the module of task path ``path`` is a ``__main__``
    module or one of the standard library's that is not imported yet.

    A module already imported is let through: importing it again runs nothing, and what the
    path names is then judged as any other (``os.system`` is no task).
    """
    module = path.rpartition(".")[0]
    if not module or module in sys.modules:
        return
    parts = module.split(".")
    if "__main__" in parts:
        kind = "a __main__ module"
    elif _in_stdlib(parts[0]):
        kind = "a module of Python's standard library"
    else:
        return
    raise NotATask(
        f"Task path {path!r} is in {module!r}, {kind}, where no task is defined; it is not "
        "imported, as importing it may run a program. Only functions decorated with @task "
        "can be enqueued."
    )


def _in_stdlib(top: str) -> bool:
    """Tell whether the top-level module ``top`` is Python's own, not a project's of the same
    name (a ``test`` folder). Finding a top-level module runs none of its code."""
    if top not in sys.stdlib_module_names:
        return False
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):  # ValueError: imported with no __spec__ (set by hand)
        return False
    if spec is None:
        return False
    if spec.has_location:
        where = spec.origin
    else:  # built in, frozen, or a namespace package (a folder without __init__.py)
        where = next(iter(spec.submodule_search_locations or ()), None)
    if where is None:
        return True
    # A venv's platstdlib (and /usr/local's stdlib) holds site-packages: told apart.
    stdlib, site = _python_dirs("stdlib", "platstdlib"), _python_dirs("purelib", "platlib")
    return where.startswith(stdlib) and not where.startswith(site)
