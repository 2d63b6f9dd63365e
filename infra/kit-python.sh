#!/usr/bin/env bash
# The Python agent author's kit (kits/python, package `a2a_watcher_kit`): its checks.
#
#   bash infra/kit-python.sh            # tools into .venv-a2a, then every check below
#   bash infra/kit-python.sh install    # only the tools (idempotent)
#
# Uses the a2a-sdk venv (infra/a2a-sdk.sh makes it; .venv-a2a or $A2A_SDK_VENV) and adds to it,
# pinned: mypy and types-protobuf (for `mypy --strict`) and flit_core (the kit's build backend,
# so that the wheel builds offline). Then:
#   1. the unit tests (kits/python/tests, unittest), the regenerate-and-diff test among them;
#   2. `mypy --strict` over the package, its generator and its tests;
#   3. `pip wheel` of the kit, and `pip install --no-index` of that wheel into a fresh venv,
#      which then imports it and builds an expectation (no registry is reached after step 0).
# The end-to-end test against `serve` is a Rust test: `cargo test --test it kits_python::`.
set -euo pipefail

# The versions the kit was checked with.
MYPY_VERSION="2.4.1"
TYPES_PROTOBUF_VERSION="7.35.1.20260906"
FLIT_CORE_VERSION="4.2.0"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${A2A_SDK_VENV:-$ROOT/.venv-a2a}"
KIT="$ROOT/kits/python"

bash "$ROOT/infra/a2a-sdk.sh"
PY="$VENV/bin/python"
# Run from / so the check never imports a local folder of the same name.
if ! (cd / && "$PY" - "$MYPY_VERSION" "$TYPES_PROTOBUF_VERSION" "$FLIT_CORE_VERSION" <<'PY' 2>/dev/null); then
import sys
from importlib.metadata import version
sys.exit((version("mypy"), version("types-protobuf"), version("flit_core")) != tuple(sys.argv[1:]))
PY
    echo "kit-python: installing mypy==$MYPY_VERSION types-protobuf==$TYPES_PROTOBUF_VERSION flit_core==$FLIT_CORE_VERSION"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        "mypy==$MYPY_VERSION" "types-protobuf==$TYPES_PROTOBUF_VERSION" "flit_core==$FLIT_CORE_VERSION"
fi
[[ "${1:-}" == "install" ]] && { echo "kit-python: tools ready in $VENV"; exit 0; }

started=$SECONDS
echo "== kit-python: unit tests"
(cd "$KIT" && "$PY" -m unittest discover -s tests -t .)

echo "== kit-python: mypy --strict"
(cd "$KIT" && "$PY" -m mypy --strict --cache-dir "$VENV/.mypy_cache-kit" a2a_watcher_kit generate.py tests)

echo "== kit-python: wheel, installed offline into a fresh venv"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# --no-build-isolation: flit_core is already in the venv, so nothing is fetched.
"$VENV/bin/pip" wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
    --wheel-dir "$work/dist" "$KIT"
wheel=("$work"/dist/a2a_watcher_kit-*.whl)
# The venv's own Python (3.11+, which the kit requires), not whatever python3 is on the PATH.
"$PY" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "${wheel[0]}"
(cd "$work" && "$work/venv/bin/python" - <<'PY')
from importlib.metadata import version
from importlib.resources import files

import a2a_watcher_kit as kit

assert files("a2a_watcher_kit").joinpath("py.typed").is_file(), "py.typed is in the wheel"
e = kit.Expectation(
    expectation_id="exp-1", kind="shipment.manifest",
    subject=kit.Subject(type="shipment", id="PA-1"), expects="the manifest",
    satisfied_by=kit.Matcher(fact_key="shipment.manifest.received:PA-1"),
    due_at="2026-09-10T20:15:00Z", basis="observed",
)
assert e.to_dict()["dueAt"] == "2026-09-10T20:15:00Z", e.to_dict()
assert version("a2a-watcher-kit") == kit.__version__, (version("a2a-watcher-kit"), kit.__version__)
print(f"kit-python: {kit.__name__} {kit.__version__} installed offline from its wheel")
PY
echo "kit-python: all checks passed in $((SECONDS - started)) s"
