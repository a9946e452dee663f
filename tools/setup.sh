#!/usr/bin/env bash
# One-time, idempotent set-up for a fresh machine (Python 3.11, root, no venv, no Bazel):
#   * a virtualenv at .venv with requirements.txt installed (re-installed when the file changes);
#   * Bazel 4.2.3 from Debian's bazel-bootstrap, linked as /usr/bin/bazel-4.2.3 for the wrapper;
#   * .bazelrc.local pointing Bazel's Python at the venv interpreter.
# Fast (< 1 s) when everything is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3

log() { printf '[setup] %s\n' "$*" >&2; }

# --- virtualenv ------------------------------------------------------------------------------
want=$(sha256sum requirements.txt | cut -d' ' -f1)
stamp=.venv/.requirements.sha256
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  t0=$(date +%s)
  log "creating .venv and installing requirements.txt (a few minutes on a fresh machine)"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
  log "venv ready in $(( $(date +%s) - t0 )) s"
fi

# --- Bazel -----------------------------------------------------------------------------------
bazel_version=$(cat .bazelversion)
if [ ! -x "/usr/bin/bazel-${bazel_version}" ]; then
  if [ ! -x /usr/bin/bazel-4 ]; then
    log "installing Debian's bazel-bootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq bazel-bootstrap >/dev/null
  fi
  ln -sf /usr/bin/bazel-4 "/usr/bin/bazel-${bazel_version}"
fi

# --- Bazel's Python = the venv's ---------------------------------------------------------------
rc="build --python_path=${root}/.venv/bin/python"
if [ "$(cat .bazelrc.local 2>/dev/null)" != "$rc" ]; then
  echo "$rc" > .bazelrc.local
fi
