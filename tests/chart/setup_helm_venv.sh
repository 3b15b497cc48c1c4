#!/usr/bin/env bash
# Create the Helm tool environment the chart tests render with: Python >= 3.12 and helm-sdkpy (real Helm as a
# library; there is no helm binary to rely on). Idempotent: an environment that already imports helm_sdkpy is
# kept. Location: $KUBEGAP_HELM_VENV, else ~/.cache/kubegap/helm-venv. Interpreter: $KUBEGAP_PYTHON312, else
# python3.12 on PATH, else the pyenv 3.12 build.
set -euo pipefail

venv="${KUBEGAP_HELM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kubegap/helm-venv}"
version="0.1.32"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import helm_sdkpy" 2>/dev/null; then
  echo "helm tool environment ready: $venv"
  exit 0
fi

python="${KUBEGAP_PYTHON312:-}"
if [ -z "$python" ]; then
  for candidate in python3.12 python3.13 "$HOME"/.pyenv/versions/3.12.*/bin/python3.12 /root/.pyenv/versions/3.12.*/bin/python3.12; do
    # pyenv shims exist on PATH even when that version is not selected: try the interpreter for real.
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      python="$candidate"; break
    fi
  done
fi
if [ -z "$python" ]; then
  echo "no Python >= 3.12 found (set KUBEGAP_PYTHON312): the chart rendering tests will be skipped" >&2
  exit 1
fi

mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "helm-sdkpy==$version"
"$venv/bin/python" -c "import helm_sdkpy; print('helm tool environment ready:', '$venv', helm_sdkpy.__version__)"
