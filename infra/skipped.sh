#!/usr/bin/env bash
# The "skipped" part of infra/test-all.sh's closing summary: what the script could not install
# or run, and every test that could not do its work here, each with its reason.
#
#   bash infra/skipped.sh LOG [LINE...]
#
# LOG is the file the tests appended their skips to (A2A_SKIPPED_LOG; tests/common/skip.rs),
# one `<test>: <reason>` a line; it may be missing or empty. Each LINE is one of the script's own
# skips. Prints nothing when nothing was skipped, else
#
#   == skipped (N):
#      - <the script's own skips, in order>
#      - test <test>: <reason>
set -euo pipefail

log="${1:?usage: infra/skipped.sh LOG [LINE...]}"
shift
lines=("$@")
if [[ -s "$log" ]]; then
    while IFS= read -r line || [[ -n "$line" ]]; do
        [[ -n "$line" ]] && lines+=("test $line")
    done <"$log"
fi
if ((${#lines[@]})); then
    echo "== skipped (${#lines[@]}):"
    printf '   - %s\n' "${lines[@]}"
fi
