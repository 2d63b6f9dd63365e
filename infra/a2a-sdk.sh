#!/usr/bin/env bash
# The official A2A Python SDK as an interop peer for tests/interop_sdk.rs.
#
#   bash infra/a2a-sdk.sh        # create .venv-a2a and install the pinned SDK if needed
#
# Idempotent: an existing venv with the pinned versions is left as it is. The tests find the venv
# at .venv-a2a (or at $A2A_SDK_VENV) and run examples/sdk-agent/agent.py with its Python.
set -euo pipefail

# The versions the interop tests were checked against (docs/interop.md).
A2A_SDK_VERSION="1.3.0"
UVICORN_VERSION="0.54.0"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${A2A_SDK_VENV:-$ROOT/.venv-a2a}"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "a2a-sdk: creating $VENV"
    python3 -m venv "$VENV"
fi
# Run from / so the check never imports a local `a2a` folder.
if ! (cd / && "$VENV/bin/python" - "$A2A_SDK_VERSION" "$UVICORN_VERSION" <<'PY' 2>/dev/null); then
import sys
from importlib.metadata import version
sys.exit(version("a2a-sdk") != sys.argv[1] or version("uvicorn") != sys.argv[2])
PY
    echo "a2a-sdk: installing a2a-sdk[http-server]==$A2A_SDK_VERSION uvicorn==$UVICORN_VERSION"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        "a2a-sdk[http-server]==$A2A_SDK_VERSION" "uvicorn==$UVICORN_VERSION"
fi
echo "a2a-sdk: ready in $VENV"
