#!/usr/bin/env bash
# Headless Chromium for the web page's browser test (tests/web_chromium.rs) and for rendering the
# README's timeline picture (infra/timeline-png.sh): Debian's `chromium` package.
#
#   bash infra/chromium.sh      # install it if /usr/bin/chromium is missing; print its version
#
# Idempotent. Needs root (apt-get), as CI and the developers' machines run.
set -euo pipefail

if [ ! -x /usr/bin/chromium ]; then
  echo "installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
/usr/bin/chromium --version
