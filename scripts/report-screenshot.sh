#!/bin/sh
# Renders an ac3 report in headless Chromium (Debian's `chromium` package)
# and saves a PNG, to check that report.html opens offline and its charts
# draw in a real browser.
#
#   scripts/report-screenshot.sh runs/e2e/report.html [out.png]
#
# Installs chromium with apt-get when it is missing and that is possible;
# otherwise it prints why and exits 0 with "skip", so CI without a browser
# is not failed by it.
set -eu
html=${1:?usage: report-screenshot.sh REPORT.html [OUT.png]}
png=${2:-${html%.html}.png}
[ -f "$html" ] || { echo "report-screenshot: $html not found" >&2; exit 1; }

browser=""
for b in chromium chromium-browser; do
	if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	echo "report-screenshot: installing chromium (apt-get)" >&2
	if DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1 ||
		{ apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1; }; then
		browser=chromium
	fi
fi
if [ -z "$browser" ]; then
	echo "report-screenshot: skip: chromium is not installed and could not be installed"
	exit 0
fi

abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
case $png in /*) ;; *) png=$(pwd)/$png ;; esac
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# No network: the report must not need any (it has no external assets).
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$profile" --screenshot="$png" --window-size=1280,2000 \
	"file://$abs" >/dev/null 2>&1
if [ ! -s "$png" ]; then
	echo "report-screenshot: chromium wrote no screenshot" >&2
	exit 1
fi
echo "report-screenshot: wrote $png"
