#!/usr/bin/env bash
# The whole test suite: formatting, lints, and every test of every crate.
# Installs and starts what the tests need itself; binds only to 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --all-features -- -D warnings

echo "== cargo test"
cargo test --workspace --all-features
