#!/bin/sh
# tools/venv.sh PYTHON DIR: make the project's virtual environment DIR with `PYTHON -m venv` (the Makefile's
# .venv; Debian's own python3 refuses `pip install` outside a venv, PEP 668).
# Leaves a working DIR made from the same interpreter alone (its pyvenv.cfg keeps its mtime, so make does not
# reinstall); makes it anew when missing, broken (no pip) or made from another interpreter than PYTHON.
set -eu
python=$1
dir=$2
base='import os, sys; print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))'

want=$("$python" -c "$base") || { echo "error: cannot run $python (set PYTHON to a python3 >= 3.10)" >&2; exit 1; }
if [ -d "$dir" ] && [ -z "$(ls -A "$dir")" ]; then
  rmdir "$dir"  # an empty directory: as if missing
fi
if [ -e "$dir" ]; then
  if [ ! -f "$dir/pyvenv.cfg" ]; then
    echo "error: $dir exists and is not a virtual environment: move it away" >&2
    exit 1
  fi
  have=$("$dir/bin/python" -c "import pip; $base" 2>/dev/null) || have=""
  [ "$have" = "$want" ] && exit 0
  if [ -n "$have" ]; then
    echo "$dir was made from $have: making it anew from $want" >&2
  else
    echo "$dir is broken (its python or pip does not run): making it anew from $want" >&2
  fi
  rm -rf "$dir"
fi

if ! log=$("$python" -m venv "$dir" 2>&1); then
  rm -rf "$dir"
  if ! "$python" -c 'import ensurepip' >/dev/null 2>&1; then
    v=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    echo "error: $python -m venv failed: install the Debian package python$v-venv (apt-get install python$v-venv)" >&2
  else
    printf '%s\n' "$log" >&2
    echo "error: $python -m venv $dir failed" >&2
  fi
  exit 1
fi
