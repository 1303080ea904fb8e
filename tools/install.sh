#!/usr/bin/env bash
# tools/install.sh VENV LOCK: install the pinned analysis environment into the virtual environment VENV from LOCK
# (requirements.lock: every package at one version, each file checked against its sha256, no dependency resolved at
# install time), then this project itself (editable, no dependencies). One progress line per package, so the
# first-time set-up (about 80 packages, 1-2 minutes) is never silent. Writes VENV/.lock-sha256 (of the lock and
# pyproject.toml it was installed from) and does nothing when neither changed since.
set -euo pipefail
venv=${1:?usage: tools/install.sh VENV LOCK}
lock=${2:?usage: tools/install.sh VENV LOCK}
[ -x "$venv/bin/python" ] || { echo "error: $venv is not a virtual environment (make it with tools/venv.sh)" >&2; exit 1; }
[ -f "$lock" ] || { echo "error: $lock not found (tools/lock.sh writes it)" >&2; exit 1; }
total=$(grep -c '^[A-Za-z0-9]' "$lock")
want=$(cat "$lock" pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -f "$venv/.lock-sha256" ] && [ "$(cat "$venv/.lock-sha256")" = "$want" ]; then
  exit 0
fi
echo "setting up $venv: $total pinned packages from $lock (hash-checked; the first time takes 1-2 minutes)" >&2
start=$(date +%s)
# awk reads pip's whole output (no early exit: pip never dies of SIGPIPE) and prints one line per package
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input --progress-bar off --require-hashes \
    --no-deps -r "$lock" 2>&1 |
  awk -v total="$total" '
    /^Collecting / { n++; printf "  [%d/%d] %s\n", n, total, $2; fflush() }
    /^(ERROR|error)/ || /does not match|THESE PACKAGES DO NOT MATCH/ { print; fflush() }
    /^Successfully installed/ { print "  installed " (NF - 2) " packages"; fflush() }'
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q --no-deps --no-build-isolation -e .
printf '%s\n' "$want" > "$venv/.lock-sha256"
echo "setting up $venv: done in $(( $(date +%s) - start )) s" >&2
