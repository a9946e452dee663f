#!/usr/bin/env bash
# One-time, idempotent set-up for a fresh machine (Python 3.11, root, no venv, no Bazel):
#   * a virtualenv at .venv with requirements.txt installed, and requirements-nodeps.txt with
#     `--no-deps` (packages of which the tests read one part, without their heavy dependencies);
#     re-installed when either file changes;
#     TF_DEVICE=gpu installs the same pins with tensorflow[and-cuda] (TensorFlow with its CUDA
#     wheels) instead of tensorflow-cpu: the GPU requirements are generated from requirements.txt
#     here, so the two can never drift. Switching TF_DEVICE recreates the venv (tensorflow-cpu
#     and tensorflow cannot share one).
#     `tools/setup.sh --print-requirements` prints the requirements TF_DEVICE selects and exits.
#   * Bazel 4.2.3 from Debian's bazel-bootstrap, linked as /usr/bin/bazel-4.2.3 for the wrapper;
#   * .bazelrc.local pointing Bazel's Python at the venv interpreter;
#   * with SETUP_CHROMIUM=1 (`make test` sets it; the audit needs no browser): Debian's chromium
#     for tests/report/render_check_test.py, if /usr/bin/chromium is missing. If it cannot be
#     installed (no network, not root), one `[setup] WARNING` line and the render check skips.
# Fast (< 1 s) when everything is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3

log() { printf '[setup] %s\n' "$*" >&2; }
apt_updated=0

# --- requirements for TF_DEVICE ------------------------------------------------------------------
device=${TF_DEVICE:-cpu}
case "$device" in
  cpu|gpu) ;;
  *) log "TF_DEVICE must be cpu or gpu, got '$device'"; exit 2 ;;
esac

requirements() {  # the requirements text for device $1
  if [ "$1" = gpu ]; then
    sed -E 's/^tensorflow-cpu==/tensorflow[and-cuda]==/' requirements.txt
  else
    cat requirements.txt
  fi
}

if [ "$(requirements "$device" | grep -cE '^tensorflow(-cpu|\[and-cuda\])==')" != 1 ]; then
  log "requirements.txt must pin tensorflow-cpu==<version> exactly once (TF_DEVICE=$device)"
  exit 2
fi
if [ "${1:-}" = "--print-requirements" ]; then
  requirements "$device"
  exit 0
fi

# --- virtualenv ------------------------------------------------------------------------------
want="$device $( { requirements "$device"; cat requirements-nodeps.txt; } | sha256sum | cut -d' ' -f1)"
stamp=.venv/.requirements.stamp
have=$(cat "$stamp" 2>/dev/null || true)
if [ -z "$have" ] && [ -f .venv/.requirements.sha256 ]; then
  have="cpu $(cat .venv/.requirements.sha256)"  # a venv set up before TF_DEVICE existed
fi
if [ ! -x .venv/bin/python ] || [ "$have" != "$want" ]; then
  t0=$(date +%s)
  if [ -x .venv/bin/python ] && [ -n "$have" ] && [ "${have%% *}" != "$device" ]; then
    log "TF_DEVICE changed from ${have%% *} to $device: recreating .venv"
    rm -rf .venv
  fi
  log "creating .venv and installing the $device requirements (a few minutes on a fresh machine)"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  requirements "$device" > .venv/requirements-installed.txt
  .venv/bin/python -m pip install -q --disable-pip-version-check \
    -r .venv/requirements-installed.txt
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    -r requirements-nodeps.txt
  echo "$want" > "$stamp"
  rm -f .venv/.requirements.sha256
  log "venv ready in $(( $(date +%s) - t0 )) s"
fi

# --- Bazel -----------------------------------------------------------------------------------
bazel_version=$(cat .bazelversion)
if [ ! -x "/usr/bin/bazel-${bazel_version}" ]; then
  if [ ! -x /usr/bin/bazel-4 ]; then
    log "installing Debian's bazel-bootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt_updated=1
    apt-get install -y -qq bazel-bootstrap >/dev/null
  fi
  ln -sf /usr/bin/bazel-4 "/usr/bin/bazel-${bazel_version}"
fi

# --- Bazel's Python = the venv's ---------------------------------------------------------------
rc="build --python_path=${root}/.venv/bin/python"
if [ "$(cat .bazelrc.local 2>/dev/null)" != "$rc" ]; then
  echo "$rc" > .bazelrc.local
fi

# --- Chromium for the report's render check (SETUP_CHROMIUM=1) --------------------------------
# No recommends (25 packages instead of 130: no desktop, no notification daemon); DejaVu named so
# that text renders even where fontconfig resolved its font dependency to another package.
if [ "${SETUP_CHROMIUM:-0}" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  log "installing Debian's chromium (headless render check of the report)"
  export DEBIAN_FRONTEND=noninteractive
  t0=$(date +%s)
  apt_log=$(mktemp)
  if { [ "$apt_updated" = 1 ] || apt-get update -qq || true
       apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
     } >"$apt_log" 2>&1 && [ -x /usr/bin/chromium ]; then
    log "chromium ready in $(( $(date +%s) - t0 )) s"
  else
    why=$(grep -v '^$' "$apt_log" | tail -n1 | cut -c1-120 || true)
    log "WARNING: could not install chromium (${why:-apt-get failed});" \
      "the browser checks of tests/report/render_check_test.py will be SKIPPED"
  fi
  rm -f "$apt_log"
fi
