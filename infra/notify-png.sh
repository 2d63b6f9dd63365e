#!/usr/bin/env bash
# Renders docs/notify-slack.html and docs/notify-email.html (the Slack and email channels'
# bodies for the worked example's first lapse, written by
# `UPDATE_DOCS=1 cargo test -p watcher-notify --test it preview::`) to PNG with headless
# Chromium, for the README and docs/howto/notifications.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/chromium.sh >/dev/null
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
for name in notify-slack:672,330 notify-email:672,480; do
    file=${name%%:*}
    size=${name#*:}
    /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
      --user-data-dir="$profile" --window-size="$size" \
      --screenshot="$PWD/docs/$file.png" "file://$PWD/docs/$file.html" 2>/dev/null
    echo "wrote docs/$file.png ($size)"
done
