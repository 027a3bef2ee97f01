# Sourced by scripts/*: find a Python (pyenv's if present, else pythonX.Y on PATH) and create or
# refresh a virtualenv with the project and the given extras installed.

# find_python VERSION: the path of a Python VERSION (e.g. 3.13), or fail with how to get one.
find_python() {
  local wanted=$1 version
  if command -v pyenv >/dev/null 2>&1; then
    version=$(pyenv versions --bare 2>/dev/null | grep -E "^${wanted//./\\.}(\.[0-9]+)?$" | sort -V | tail -n 1)
    if [ -n "$version" ]; then
      echo "$(pyenv root)/versions/$version/bin/python$wanted"
      return
    fi
  fi
  if command -v "python$wanted" >/dev/null 2>&1; then
    command -v "python$wanted"
    return
  fi
  echo "No Python $wanted found: install it (pyenv install $wanted, or your OS package)." >&2
  return 1
}

# make_venv_python VERSION DIR EXTRAS [SPEC...]: a venv at DIR on Python VERSION with the project
# installed editable with its EXTRAS (e.g. "test,hiredis"), plus the pip SPECs (e.g. a Django range).
make_venv_python() {
  local python_version=$1 dir=$2 extras=$3
  shift 3
  if [ ! -x "$dir/bin/python" ]; then
    "$(find_python "$python_version")" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --upgrade pip
  fi
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[$extras]" "$@"
}

# make_venv DIR EXTRAS [SPEC...]: the same on Python 3.12, the version the project is developed on.
make_venv() {
  make_venv_python 3.12 "$@"
}
