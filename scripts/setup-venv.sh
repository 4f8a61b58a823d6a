#!/usr/bin/env bash
# Creates the Python virtual environment of the torch 2.x tests (the parity
# suite in tests/e2e/torch2 and python/fsdp_opt's unit tests) at
# ${FSDP_VENV:-<repo>/.venv}: Debian's python3 -m venv, the pinned versions
# of python/requirements-test.txt, and the fsdp_opt package from the
# checkout. Debian's own python3-torch (1.13) stays the oracle of the older
# tests; this environment is torch 2.x from PyPI, as users have it.
#
# Idempotent and fast when nothing changed: a stamp file in the environment
# holds the hash of the requirements and of python/'s sources, and the
# script returns at once when it matches. The first run downloads torch's
# PyPI wheel, which pulls ~3 GB of NVIDIA CUDA libraries even on a CPU-only
# machine (accepted: it is the torch users install; ~80 s with a warm pip
# cache, a few minutes cold).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${FSDP_VENV:-$ROOT/.venv}
REQUIREMENTS=$ROOT/python/requirements-test.txt
STAMP=$VENV/.fsdp-requirements.sha256

# The package's sources count too: a changed fsdp_opt is reinstalled. (Not
# all of python/: pip's in-tree build leaves copies in python/build.)
hash=$( (cat "$REQUIREMENTS" "$ROOT/python/pyproject.toml"
         find "$ROOT/python/fsdp_opt" -name '*.py' | LC_ALL=C sort | xargs cat) |
       sha256sum | cut -d' ' -f1)
if [[ -x $VENV/bin/python && -f $STAMP && $(cat "$STAMP") == "$hash" ]]; then
  echo "setup-venv: $VENV up to date"
  exit 0
fi

echo "setup-venv: installing $REQUIREMENTS into $VENV"
[[ -x $VENV/bin/python ]] || /usr/bin/python3 -m venv "$VENV"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$VENV/bin/python" -m pip install -q -r "$REQUIREMENTS"
# A copy, not --editable: the tests run what a user's `pip install ./python`
# gives. --no-deps: the pinned requirements above are its dependencies.
"$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "$ROOT/python"
echo "$hash" > "$STAMP"
echo "setup-venv: done"
