#!/usr/bin/env bash
# The documentation book (docs/, mdBook; docs/SUMMARY.md is its table of contents).
#
#   bash infra/book.sh          # install mdbook if missing, then build the book into target/book
#
# mdbook is the pinned version below, used from PATH when it is that version, else installed
# from crates.io with cargo into .tools/ (once; about 4 minutes on 2 cores), without its `serve`
# and `watch` features (`mdbook serve docs` needs a full `cargo install mdbook`).
# The build fails on a chapter whose file is missing (docs/book.toml: create-missing = false).
# Links and examples are checked by `cargo test --test it docs::`.
#
# Exit status: 0 built; 3 mdbook could not be installed (no crates.io: the caller skips the
# build and says so); anything else, the book did not build.
set -euo pipefail

MDBOOK_VERSION="0.5.4"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/.tools"

mdbook=""
if command -v mdbook >/dev/null 2>&1 && [[ "$(mdbook --version)" == "mdbook v$MDBOOK_VERSION" ]]; then
    mdbook="$(command -v mdbook)"
elif [[ -x "$TOOLS/bin/mdbook" ]] && [[ "$("$TOOLS/bin/mdbook" --version)" == "mdbook v$MDBOOK_VERSION" ]]; then
    mdbook="$TOOLS/bin/mdbook"
else
    echo "book: installing mdbook $MDBOOK_VERSION into $TOOLS (cargo install)"
    if ! CARGO_TARGET_DIR="$ROOT/target/tools" cargo install mdbook --version "$MDBOOK_VERSION" \
        --locked --no-default-features --features search --root "$TOOLS" --quiet; then
        echo "book: mdbook could not be installed" >&2
        exit 3
    fi
    mdbook="$TOOLS/bin/mdbook"
fi

"$mdbook" build "$ROOT/docs"
echo "book: built into target/book ($("$mdbook" --version))"
