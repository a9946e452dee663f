#!/usr/bin/env bash
# How long `pip install` of the wheel takes on a fresh machine, and what a user's first audit
# then gives. Not part of the suite: it downloads the stack from PyPI (~1 GB).
#
#   bash benchmarks/install_time.sh [WORKDIR]      (default: a new temporary directory)
#
# 1. builds the wheel from a copy of the checkout (no network: this venv's setuptools);
# 2. creates a fresh venv with the base interpreter and times `pip install <wheel>` (PyPI,
#    no pip cache: every dependency is downloaded and installed);
# 3. from the user's directory (not the checkout), runs `tf-forget audit` on a tiny own-model
#    folder (tests/e2e/user_files.py) and prints the verdict line. Compare with
#    `PYTHONPATH=. .venv/bin/python eval/audit.py <the same flags>` (tests/package/wheel_test.py
#    checks that equality offline).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
WORK="${1:-$(mktemp -d)}"
mkdir -p "$WORK/src"
cd "$ROOT"
cp pyproject.toml README.md "$WORK/src/"
find tf_forget -name __pycache__ -prune -o -type f ! -name BUILD ! -name '*.pyc' -print \
  | tar -cf - -T - | tar -xf - -C "$WORK/src"
"$PY" -m pip wheel --quiet --no-deps --no-build-isolation --no-index -w "$WORK/dist" "$WORK/src"
WHEEL="$(ls "$WORK"/dist/tf_forget-*.whl)"
echo "wheel: $(basename "$WHEEL") $(stat -c %s "$WHEEL") bytes"

BASE="$("$PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')"
"$BASE" -m venv "$WORK/venv"
start=$(date +%s%N)
"$WORK/venv/bin/python" -m pip install --quiet --no-cache-dir "$WHEEL"
end=$(date +%s%N)
echo "pip install: $(( (end - start) / 1000000 )) ms"
echo "venv size: $(du -sh "$WORK/venv" | cut -f1)"

mkdir -p "$WORK/user"
PYTHONPATH="$ROOT" TF_USE_LEGACY_KERAS=1 "$PY" -c "
import pathlib, sys
from tests.e2e import user_files
user_files.make(pathlib.Path('$WORK/user'), num_images=100)" 2>/dev/null
cd "$WORK/user"
start=$(date +%s%N)
env -u PYTHONPATH -u TF_USE_LEGACY_KERAS "$WORK/venv/bin/tf-forget" audit \
  --dataset=folder:images --reference=model.keras --candidate=int8=int8.tflite \
  --out="$WORK/audit" --executor=inline --deploy_encoding=plain | grep -A1 "^recommended"
end=$(date +%s%N)
echo "tf-forget audit: $(( (end - start) / 1000000 )) ms (report: $WORK/audit/report.html)"
