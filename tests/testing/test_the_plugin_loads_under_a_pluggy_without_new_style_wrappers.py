"""pytest loads our plugin in every session of every project that installs django-threadmill.
Under a pluggy older than 1.1 (pytest 7.3 and before take 1.0), its new-style hook wrapper
(``hookimpl(wrapper=True)``) was a TypeError that stopped every session before a test ran, the
project's own tests included. The plugin's wrapper is of the kind every pluggy takes.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

OLD_PYTEST = ("pytest==7.3.2", "pluggy==1.0.0")  # the oldest pytest with pytest.StashKey is 7.0


@pytest.fixture(scope="module")
def old_pytest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python of a venv of its own, with an old pytest and pluggy and this checkout installed
    as a user installs it (its entry points registered), without its dependencies: pytest
    loads the plugin before anything imports Django."""
    here = tmp_path_factory.mktemp("old-pytest")
    source = here / "source"  # built from a copy: setuptools leaves build/ where it builds
    shutil.copytree(ROOT / "django_threadmill", source / "django_threadmill",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "venv", str(here / "venv")], check=True)
    python = here / "venv" / "bin" / "python"
    install = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*install, *OLD_PYTEST], check=True)
    subprocess.run([*install, "--no-deps", str(source)], check=True)
    return python


@pytest.mark.timeout(300)  # a venv and two packages to install
def test_a_session_of_an_old_pytest_runs_its_tests(old_pytest: Path, tmp_path: Path) -> None:
    (tmp_path / "test_project.py").write_text("def test_the_projects_own():\n    pass\n")

    def old_pytest_run(*arguments: str) -> str:
        ran = subprocess.run(
            [old_pytest, "-m", "pytest", "-p", "no:cacheprovider", *arguments],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        return ran.stdout

    assert "1 passed" in old_pytest_run("-q", "test_project.py")
    assert "threadmill -- " in old_pytest_run("--fixtures", "test_project.py")  # ours, loaded
