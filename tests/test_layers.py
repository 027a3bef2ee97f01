"""The package's imports run one way (docs/design.md, Package layout and layers): no circle, and
no import from a lower layer back up to a higher one. Read from the source, every import
counted (function-level and TYPE_CHECKING ones too)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "django_threadmill"
ROOT = "django_threadmill"
# Lowest first; a module belongs to the longest prefix listed. Keep in step with the table in
# docs/design.md.
LAYERS: list[tuple[str, ...]] = [
    ("django_threadmill", "exceptions", "compat", "wording", "forks", "flags"),
    ("conf", "codec", "retry", "task"),
    ("broker",),
    ("observability",),
    ("enqueue",),
    ("schedules",),
    ("checks",),
    ("backend",),
    ("aliases",),
    ("workflows", "progress"),
    ("worker",),
    ("admin", "views", "urls", "management", "apps", "models", "migrations"),
    ("testing", "pytest_plugin"),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> int:
    best, found = -1, None
    for number, names in enumerate(LAYERS):
        for name in names:
            full = ROOT if name == ROOT else f"{ROOT}.{name}"
            if (module == full or module.startswith(full + ".")) and len(full) > best:
                best, found = len(full), number
    assert found is not None, f"{module} is in no layer: add it to LAYERS and docs/design.md"
    return found


def imports_of(module: str) -> set[str]:
    """Return the package modules ``module`` imports (a submodule, not its package, when a
    ``from package import submodule`` names one)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith(ROOT)}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            if not base.startswith(ROOT):
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in MODULES else base)
    return (found & MODULES.keys()) - {module}


GRAPH = {module: imports_of(module) for module in MODULES}


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_imports_never_run_up() -> None:
    upward = sorted(
        f"{module} (layer {layer_of(module)}) -> {target} (layer {layer_of(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )
    assert not upward, "imports that run up:\n" + "\n".join(upward)


def test_no_import_circle() -> None:
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> None:
        if module in path:
            circle = [*path[path.index(module) :], module]
            raise AssertionError("import circle: " + " -> ".join(circle))
        if module in done:
            return
        path.append(module)
        for target in sorted(GRAPH[module]):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(GRAPH):
        visit(module)
