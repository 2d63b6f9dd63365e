#!/usr/bin/env bash
# The whole test suite: formatting, lints, the API documentation, every test of every crate, the
# goal load's short version on the scale model of AWS, the least-privilege check of
# template.yaml, and a `bench --quick` smoke run.
# Installs and starts what the tests need itself (a Python venv with the moto AWS emulator,
# .venv-a2a with the pinned a2a-sdk for the interop tests, and the TypeScript example agent's
# node_modules with the pinned @a2a-js/sdk) and binds only to 127.0.0.1.
#
# What it needs beyond the Rust toolchain, and what it does without it (each skip is printed
# again in the closing summary, with its reason):
# - python3 with the venv module and PyPI: cfn-lint, checkov and moto in .venv, a2a-sdk in
#   .venv-a2a. Without them: the template checks are skipped, the crates whose tests run on the
#   AWS emulator are left out of `cargo test`, and the SDK interop tests skip.
# - Node.js 20 or later with npm, and the npm registry: @a2a-js/sdk in
#   examples/typescript-agent/node_modules, the TypeScript kit's build tools (typescript) in
#   kits/typescript/node_modules, and @cloud-copilot/iam-simulate in infra/iam/node_modules.
#   Without them: the TypeScript example agent's and kit's tests skip, and the local AWS stack
#   runs without IAM (its IAM tests and the least-privilege check skip).
# - root and apt-get (Debian) for Chromium, unless /usr/bin/chromium is there already. Without
#   them: the browser test of the web page skips.
# - crates.io for mdbook (infra/book.sh installs it into .tools/). Without it: the book is not
#   built (its links and JSON examples are still checked by tests/docs.rs).
# A test that cannot do its work on this machine (the full-disk test without permission to
# mount, a test whose tool above did not install) says SKIPPED with its reason and is listed in
# the closing summary too (tests/common/skip.rs, infra/skipped.sh), though cargo reports it `ok`.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

# What this run could not install, one line each, printed again at the end.
skipped=()
skip() {
    skipped+=("$1")
    echo "SKIPPED: $1"
}
# Each test that cannot do its work here (no permission to mount, say) appends a line to this
# file (tests/common/skip.rs): listed at the end too, with its reason, though cargo says `ok`.
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" = /* ]] || target_dir="$PWD/$target_dir"
mkdir -p "$target_dir"
export A2A_SKIPPED_LOG="$target_dir/skipped-tests.log"
: >"$A2A_SKIPPED_LOG"
summary() {
    bash infra/skipped.sh "$A2A_SKIPPED_LOG" ${skipped[@]+"${skipped[@]}"}
}

# python3 with a working venv module is needed by every Python step below.
python_ok=true
if ! command -v python3 >/dev/null 2>&1; then
    python_ok=false
    python_why="python3 is not installed"
elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    python_ok=false
    python_why="python3 has no venv/ensurepip module (Debian: apt-get install python3-venv)"
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

# Packages whose tests run on the AWS emulator: left out of `cargo test` when it cannot start.
aws_packages=(watcher-store-dynamodb learnables-store-dynamodb watcher-aws watcher-lambda watcher-fn-lesson-write)
exclude=()

if $python_ok; then
    echo "== cfn-lint template.yaml"
    bash infra/lint-template.sh

    echo "== checkov template.yaml (every failing check fixed or skipped with a reason)"
    bash infra/checkov.sh
else
    skip "cfn-lint and checkov on template.yaml: $python_why"
fi

echo "== AWS emulator (moto) on 127.0.0.1"
if $python_ok && bash infra/moto.sh; then
    trap 'bash infra/moto.sh stop >/dev/null 2>&1 || true; summary' EXIT
    export AWS_ENDPOINT_URL="http://127.0.0.1:${MOTO_PORT:-5005}"
    export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
else
    trap summary EXIT
    for p in "${aws_packages[@]}"; do exclude+=(--exclude "$p"); done
    skip "the tests of ${aws_packages[*]} (they run on the moto AWS emulator): ${python_why:-moto did not install or start, see above}"
    export A2A_SKIP_SMTP=1
    skip "the email channel's test (tests/serve_notify.rs, aiosmtpd in the same venv): ${python_why:-the venv did not install, see above}"
fi

echo "== the official A2A Python SDK (tests/interop_sdk.rs) in .venv-a2a"
if $python_ok && bash infra/a2a-sdk.sh; then
    :
else
    export A2A_SKIP_SDK=1
    skip "the SDK interop tests (tests/interop_sdk.rs): ${python_why:-the a2a-sdk venv did not install, see above}"
fi

echo "== the Python kit (kits/python): unit tests, mypy --strict, offline wheel install"
if $python_ok && [[ -z "${A2A_SKIP_SDK:-}" ]]; then
    bash infra/kit-python.sh
else
    skip "the Python kit's checks (infra/kit-python.sh): ${python_why:-the a2a-sdk venv did not install, see above}"
fi

echo "== the official A2A JavaScript SDK (examples/typescript-agent, tests/interop_sdk.rs) in its node_modules"
if bash infra/a2a-js.sh; then
    :
else
    export A2A_SKIP_NODE=1
    skip "the TypeScript example agent's tests (tests/interop_sdk.rs): node_modules did not install, see above"
fi

echo "== the TypeScript kit (kits/typescript; tests/kits_typescript.rs)"
kit_ts_rc=0
bash infra/kit-typescript.sh || kit_ts_rc=$?
case $kit_ts_rc in
    0) ;;
    3)
        export A2A_SKIP_KIT_TS=1
        skip "the TypeScript kit's tests (tests/kits_typescript.rs): node or its node_modules did not install, see above"
        ;;
    *) exit "$kit_ts_rc" ;;
esac

echo "== headless Chromium for the web page's browser test (tests/web_chromium.rs)"
chromium_rc=0
bash infra/chromium.sh || chromium_rc=$?
case $chromium_rc in
    0) ;;
    3)
        export A2A_SKIP_CHROMIUM=1
        skip "the web page's browser test (tests/web_chromium.rs): Chromium is not installed and this run cannot install it (see above)"
        ;;
    *) exit "$chromium_rc" ;;
esac

echo "== the book (docs/, mdBook)"
book_rc=0
bash infra/book.sh || book_rc=$?
case $book_rc in
    0) ;;
    3) skip "building the book (docs/): mdbook could not be installed from crates.io (see above); its links and examples are still checked by tests/docs.rs" ;;
    *) exit "$book_rc" ;;
esac

echo "== cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --all-features -- -D warnings

echo "== cargo doc (every crate's API documentation, warnings are errors)"
# A broken intra-doc link or a malformed doc comment fails here, not in a reader's browser.
# On a target whose dependencies are built, documenting all 25 workspace crates took 35 s (79 s
# with other builds on the same 2 cores); only the crates changed since the last run are
# documented again (0.3 s when none did).
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features

if $python_ok; then
    # tests/aws_local.rs and the deployment suite (tests/deployments.rs) run these binaries as
    # processes (infra/aws-local.sh --no-build).
    echo "== the Lambda function binaries (debug)"
    # Every binary of the workspace, with the same features as `cargo test --workspace` below,
    # so the dependencies are built once for both.
    cargo build --workspace --all-features --bins
fi

echo "== the IAM evaluator of the local AWS stack (infra/iam, @cloud-copilot/iam-simulate)"
iam_on=false
if $python_ok && bash infra/iam.sh; then
    iam_on=true
    # Every IAM decision the local stacks make during `cargo test`, for the least-privilege check.
    export A2A_IAM_DECISIONS="$PWD/target/iam-decisions.jsonl"
    : >"$A2A_IAM_DECISIONS"
else
    skip "IAM enforcement on the local AWS stack and the least-privilege check (infra/iam_coverage.py): ${python_why:-the evaluator did not install, see above}"
fi

echo "== cargo test"
cargo test --workspace --all-features "${exclude[@]}"

if $python_ok; then
    # Ignored by the default run for its length (about 5 minutes): the goal load's short
    # version against the scale model of AWS (docs/performance.md, "The goal load on the scale model").
    echo "== the goal load's short version on the scale model of AWS (lost 0, sent twice 0)"
    cargo test --all-features --test it goal_load -- --ignored
fi

if $iam_on; then
    echo "== least privilege: every statement and action of template.yaml is needed by a call the tests made"
    .venv/bin/python infra/iam_coverage.py "$A2A_IAM_DECISIONS"
fi

echo "== a2a-watcher bench --quick (smoke test: it runs and prints its JSON line; no timing is asserted)"
# The debug binary `cargo test` just built (a release build would add minutes); about 90 s.
bench_started=$SECONDS
bench_last=$(target/debug/a2a-watcher bench --quick | tail -n 1)
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert [s["openExpectations"] > 0 for s in d["sizes"]] == [True, True], d' "$bench_last"
else
    skip "checking bench's JSON line: python3 is not installed"
fi
echo "bench --quick ran in $((SECONDS - bench_started)) s"

echo "== all checks passed in $((SECONDS - started)) s"
