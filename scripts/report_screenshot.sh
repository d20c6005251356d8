#!/usr/bin/env bash
# Open an `oracle report` HTML file in headless Chromium, without network access, and
# check that it renders: every section heading in the DOM Chromium built, and a
# screenshot that is not blank.
#
# Usage:  scripts/report_screenshot.sh REPORT.html [SCREENSHOT.png]
#
# Writes SCREENSHOT.png (default: REPORT.png next to the report, 1280 px wide, 4000 px
# tall) and SCREENSHOT.dom.html (the DOM after rendering, from --dump-dom).  Exit status
# 0 when every heading is there and the screenshot is a non-blank PNG; 1 when not;
# 2 on bad usage or when Chromium is missing.
#
# Chromium: Debian's package (`apt-get install -y chromium`) at /usr/bin/chromium, or
# set CHROMIUM=/path/to/chrome.  Network: the report needs none; Chromium is started
# with its background services off and every host name resolving to nothing, so a
# report that tried to load anything from the network would show it (broken image).
# Tests: tests/test_report.py runs this script.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || "$1" == "-h" || "$1" == "--help" ]]; then
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
report=$1
[[ -f "$report" ]] || { echo "report_screenshot.sh: no such file: $report" >&2; exit 2; }
shot=${2:-${report%.*}.png}
dom=${shot%.png}.dom.html
chromium=${CHROMIUM:-/usr/bin/chromium}
[[ -x "$chromium" ]] || { echo "report_screenshot.sh: Chromium not found at $chromium (apt-get install -y chromium)" >&2; exit 2; }

url="file://$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
profile=$(mktemp -d "${TMPDIR:-/tmp}/oracle-chromium.XXXXXX")
trap 'rm -rf "$profile"' EXIT

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --disable-extensions --disable-default-apps --hide-scrollbars
       "--host-resolver-rules=MAP * ~NOTFOUND"
       "--user-data-dir=$profile" --window-size=1280,4000)

timeout 120 "$chromium" "${flags[@]}" --screenshot="$shot" "$url" >/dev/null 2>&1
timeout 120 "$chromium" "${flags[@]}" --dump-dom "$url" >"$dom" 2>/dev/null

headings=("Summary" "Inputs" "Recommendation" "Plots" "Limits")
if grep -q 'id="accuracy"' "$report"; then
    headings+=("Accuracy against measured runs")
fi
status=0
for h in "${headings[@]}"; do
    if ! grep -q "<h2>$h</h2>" "$dom"; then
        echo "missing section heading: $h" >&2
        status=1
    fi
done
if [[ ! -s "$shot" ]] || [[ "$(head -c 8 "$shot" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]]; then
    echo "no PNG screenshot written: $shot" >&2
    status=1
elif [[ $(stat -c %s "$shot") -lt 50000 ]]; then  # a blank 1280x4000 page is about 23 kB
    echo "the screenshot looks blank (only $(stat -c %s "$shot") bytes): $shot" >&2
    status=1
fi
if [[ $status -eq 0 ]]; then
    echo "ok: ${#headings[@]} sections rendered; screenshot $shot, DOM $dom"
fi
exit $status
