#!/usr/bin/env bash
# The documentation book (docs/, mdBook; docs/SUMMARY.md is its table of contents).
#
#   bash infra/book.sh          # install mdbook if missing, then build the book into target/book
#   bash infra/book.sh serve    # install mdbook with its `serve` feature if missing, then serve
#                               # the book on http://127.0.0.1:3000 (BOOK_PORT to change),
#                               # rebuilt as the pages change; Ctrl-C stops it
#
# mdbook is the pinned version below, used from PATH when it is that version (and, to serve,
# has its `serve` command), else installed from crates.io with cargo into .tools/ (once; about
# 4 minutes on 2 cores to build, 6 with `serve`). What it needs: cargo (the Rust toolchain the
# README asks for) and crates.io. A build alone installs it without its `serve` and `watch`
# features; `serve` installs it with them, in place of the other (it builds just as well).
# The build fails on a chapter whose file is missing (docs/book.toml: create-missing = false).
# Links and examples are checked by `cargo test --test it docs::`.
#
# Exit status: 0 built (or served until stopped); 3 mdbook could not be installed (no
# crates.io: the caller skips the build and says so); 2 an unknown argument; anything else,
# the book did not build.
set -euo pipefail

MDBOOK_VERSION="0.5.4"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/.tools"

mode="${1:-build}"
case "$mode" in
    build | serve) ;;
    *)
        echo "usage: bash infra/book.sh [serve]" >&2
        exit 2
        ;;
esac

# Whether `$1` is mdbook of the pinned version, with the `serve` command when serving.
usable() {
    [[ -x "$1" ]] && [[ "$("$1" --version)" == "mdbook v$MDBOOK_VERSION" ]] || return 1
    [[ $mode == build ]] || "$1" serve --help >/dev/null 2>&1
}

mdbook=""
if command -v mdbook >/dev/null 2>&1 && usable "$(command -v mdbook)"; then
    mdbook="$(command -v mdbook)"
elif usable "$TOOLS/bin/mdbook"; then
    mdbook="$TOOLS/bin/mdbook"
else
    features=(--no-default-features --features search)
    what=""
    if [[ $mode == serve ]]; then
        features=(--features search,serve,watch)
        what=" with its serve feature"
    fi
    echo "book: installing mdbook $MDBOOK_VERSION$what into $TOOLS (cargo install; a few minutes, once)"
    if ! CARGO_TARGET_DIR="$ROOT/target/tools" cargo install mdbook --version "$MDBOOK_VERSION" \
        --locked "${features[@]}" --root "$TOOLS" --force --quiet; then
        echo "book: mdbook could not be installed" >&2
        exit 3
    fi
    mdbook="$TOOLS/bin/mdbook"
fi

if [[ $mode == serve ]]; then
    port="${BOOK_PORT:-3000}"
    echo "book: serving docs/ on http://127.0.0.1:$port (Ctrl-C stops it)"
    exec "$mdbook" serve "$ROOT/docs" --hostname 127.0.0.1 --port "$port"
fi
"$mdbook" build "$ROOT/docs"
echo "book: built into target/book ($("$mdbook" --version))"
