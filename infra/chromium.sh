#!/usr/bin/env bash
# Headless Chromium for the web page's browser test (tests/web_chromium.rs) and for rendering the
# README's timeline picture (infra/timeline-png.sh): Debian's `chromium` package.
#
#   bash infra/chromium.sh      # install it if /usr/bin/chromium is missing; print its version
#
# Idempotent. Installing needs root and apt-get (Debian), as CI and the developers' machines have.
# Exit 3, after saying why, when Chromium is missing and cannot be installed here (not root, or no
# apt-get): infra/test-all.sh then skips the browser test and says so in its summary.
set -euo pipefail

if [ ! -x /usr/bin/chromium ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium: /usr/bin/chromium is missing and there is no apt-get (not Debian): install Debian's chromium package, or any Chromium at /usr/bin/chromium" >&2
    exit 3
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "chromium: /usr/bin/chromium is missing and installing it needs root (apt-get install chromium fonts-dejavu-core); run this script as root once" >&2
    exit 3
  fi
  echo "installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
/usr/bin/chromium --version
