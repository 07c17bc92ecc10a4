#!/usr/bin/env bash
# Install Debian's Chromium for tests/test_book_browser.py when it is missing.
# Never fails the build: where it cannot install, the browser test skips and says why.
set -u
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  echo "browser-deps: chromium present"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "browser-deps: chromium missing and not installable here (needs root and apt-get);" \
       "the browser test will skip"
  exit 0
fi
echo "browser-deps: installing Debian's chromium (about a minute)"
export DEBIAN_FRONTEND=noninteractive
if apt-get update -qq && apt-get install -y -qq chromium >/dev/null; then
  echo "browser-deps: installed $(chromium --version 2>/dev/null | head -n 1)"
else
  echo "browser-deps: apt-get could not install chromium; the browser test will skip"
fi
exit 0
