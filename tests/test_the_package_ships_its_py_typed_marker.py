"""The package ships a ``py.typed`` marker (PEP 561), in its wheel and sdist.

Without it a project's type checker (mypy, pyright) ignores the package's hints and reads every
name it exports as ``Any``. Nothing is built here: the file is there, and pyproject.toml's
package-data takes it into both.
"""

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import django_threadmill

PACKAGE = Path(django_threadmill.__file__).parent


def test_the_marker_is_in_the_package() -> None:
    assert (PACKAGE / "py.typed").is_file()


def test_package_data_takes_the_marker_into_the_wheel_and_sdist() -> None:
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["django_threadmill"]
    assert any(fnmatch("py.typed", pattern) for pattern in patterns), patterns
