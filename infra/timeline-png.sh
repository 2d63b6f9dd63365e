#!/usr/bin/env bash
# Renders docs/timeline.svg (the worked example's timeline, written by the watcher-timeline test:
# `UPDATE_TIMELINE=1 cargo test -p watcher-timeline`) to docs/timeline.png with headless
# Chromium, at the picture's own size.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/chromium.sh >/dev/null
svg="$PWD/docs/timeline.svg"
width=$(grep -o 'width="[0-9.]*"' "$svg" | head -n 1 | grep -o '[0-9]*' | head -n 1)
height=$(grep -o 'height="[0-9.]*"' "$svg" | head -n 1 | grep -o '[0-9]*' | head -n 1)
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
/usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
  --user-data-dir="$profile" --window-size="${width},${height}" \
  --screenshot="$PWD/docs/timeline.png" "file://$svg" 2>/dev/null
echo "wrote docs/timeline.png (${width}x${height})"
