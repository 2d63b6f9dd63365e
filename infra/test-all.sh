#!/usr/bin/env bash
# The whole test suite: formatting, lints, every test of every crate, and a `bench --quick` smoke run.
# Installs and starts what the tests need itself (a Python venv with the moto AWS emulator, and
# .venv-a2a with the pinned a2a-sdk for the interop tests) and
# binds only to 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cfn-lint template.yaml"
bash infra/lint-template.sh

echo "== checkov template.yaml (every failing check fixed or skipped with a reason)"
bash infra/checkov.sh

echo "== AWS emulator (moto) on 127.0.0.1"
bash infra/moto.sh
trap 'bash infra/moto.sh stop >/dev/null 2>&1 || true' EXIT
export AWS_ENDPOINT_URL="http://127.0.0.1:${MOTO_PORT:-5005}"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1

echo "== the official A2A Python SDK (tests/interop_sdk.rs) in .venv-a2a"
bash infra/a2a-sdk.sh

echo "== headless Chromium for the web page's browser test (tests/web_chromium.rs)"
bash infra/chromium.sh

echo "== cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --all-features -- -D warnings

echo "== cargo test"
cargo test --workspace --all-features

echo "== a2a-watcher bench --quick (smoke test: it runs and prints its JSON line; no timing is asserted)"
# The debug binary `cargo test` just built (a release build would add minutes); about 90 s.
bench_started=$SECONDS
bench_last=$(target/debug/a2a-watcher bench --quick | tail -n 1)
python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert [s["openExpectations"] > 0 for s in d["sizes"]] == [True, True], d' "$bench_last"
echo "bench --quick ran in $((SECONDS - bench_started)) s"

echo "== all checks passed in $((SECONDS - started)) s"
