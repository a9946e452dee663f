#!/usr/bin/env bash
# The static checks, in seconds, before any test (`make test` runs this first; docs/testing.md):
#   * ruff's lint over the code: pyflakes (unused imports and variables, undefined names),
#     syntax errors, the import order, the docstring rules ([tool.ruff] in pyproject.toml);
#   * ruff's formatter in check mode: every file as `ruff format` writes it (2-space indent,
#     100 columns; `ruff format DIR` formats them);
#   * mypy on the typed core: the files [tool.mypy] names in pyproject.toml.
# One line per finding (`path:line:col: CODE message`; the formatter names each file it would
# rewrite); exit 1 when any finds something.
#   PYTHON=...   the interpreter that has ruff and mypy (default: .venv/bin/python)
# `ruff check --fix DIR` sorts the imports and removes unused ones; review what it did.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
DIRS=(tf_forget eval tflite_export tests tools benchmarks examples)

t0=$(date +%s.%N)
status=0
"$PYTHON" -m ruff check --quiet --output-format=concise "${DIRS[@]}" || status=1
"$PYTHON" -m ruff format --check --quiet "${DIRS[@]}" || status=1
"$PYTHON" -m mypy --config-file pyproject.toml --no-error-summary || status=1
seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [ "$status" = 0 ]; then
  echo "static checks: ruff (lint, format) and mypy found nothing (${seconds} s)"
else
  echo "static checks FAILED (ruff lint / format, mypy findings above; ${seconds} s)" >&2
fi
exit "$status"
