#!/usr/bin/env bash
# The report test opens the HTML in Debian's headless Chromium. Install it when
# missing and we can (root with apt-get); otherwise that one test skips and says why.
set -u
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the report test..." >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
    || echo "could not install chromium; the report rendering test will skip" >&2
fi
exit 0
