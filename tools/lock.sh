#!/usr/bin/env bash
# tools/lock.sh: write requirements.lock (the analysis environment: the project's dependencies with its test, fast
# and dask extras, and setuptools to build the editable install; dask.distributed serves `mpcc ingest --scheduler`
# and campaigns across hosts, docs/multi-host.md) and requirements-lab.lock (the same pins plus JupyterLab, for
# `make lab`) with pip-tools' pip-compile: every package pinned to one version with the sha256 of each of its files
# on PyPI. Run it on purpose (an upgrade is a change to review: `make test`, `make bench`), never from make or CI;
# the Makefile and CI install from the committed locks (tools/install.sh). pip-compile keeps the pins the locks
# already hold (no --upgrade), so a new extra adds its packages and leaves the others' versions alone.
#   bash tools/lock.sh [PYTHON]          (PYTHON: the interpreter the lock is resolved for, default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}
tmp=$(mktemp -d /tmp/mpcc-lock.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check 'pip-tools>=7.4'
printf 'setuptools>=64\n' > "$tmp/build.in"
compile=("$tmp/venv/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url
         --no-emit-find-links --resolver=backtracking)
"${compile[@]}" --extra test --extra fast --extra dask -o requirements.lock pyproject.toml "$tmp/build.in"
printf -- '-c %s\n' "$PWD/requirements.lock" > "$tmp/lab.in"
"${compile[@]}" --extra test --extra fast --extra dask --extra lab -o requirements-lab.lock pyproject.toml "$tmp/build.in" \
    "$tmp/lab.in"
# the comments name the command and the lock, not this machine's paths
sed -i -e "s#$tmp/[a-z]*\\.in#tools/lock.sh#g" -e "s#-c $PWD/#-c #g" requirements.lock requirements-lab.lock
echo "wrote requirements.lock ($(grep -c '^[A-Za-z0-9]' requirements.lock) packages) and requirements-lab.lock" \
     "($(grep -c '^[A-Za-z0-9]' requirements-lab.lock) packages) for $("$python" -V)"
