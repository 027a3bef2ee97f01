# Sourced by scripts/*: find a Python 3.12 (pyenv's if present, else python3.12 on PATH)
# and create or refresh a virtualenv with the project and the given extras installed.

find_python312() {
  if command -v pyenv >/dev/null 2>&1; then
    local version
    version=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.[0-9]+)?$' | sort -V | tail -n 1)
    if [ -n "$version" ]; then
      echo "$(pyenv root)/versions/$version/bin/python3.12"
      return
    fi
  fi
  if command -v python3.12 >/dev/null 2>&1; then
    command -v python3.12
    return
  fi
  echo "No Python 3.12 found: install it (pyenv install 3.12, or your OS package)." >&2
  return 1
}

# make_venv DIR EXTRAS [SPEC...]: a venv at DIR with the project installed editable with its
# EXTRAS (e.g. "test,hiredis"), plus the pip SPECs (e.g. a Django range).
make_venv() {
  local dir=$1 extras=$2
  shift 2
  if [ ! -x "$dir/bin/python" ]; then
    "$(find_python312)" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --upgrade pip
  fi
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[$extras]" "$@"
}
