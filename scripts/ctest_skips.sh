#!/usr/bin/env bash
# Lists the tests the last ctest run in BUILD_DIR skipped, each with the reason it printed
# (GTEST_SKIP's message: the CPU feature or tool missing), from Testing/Temporary/LastTest.log.
#   scripts/ctest_skips.sh BUILD_DIR [TITLE]
set -euo pipefail
BUILD_DIR="$1"
TITLE="${2:-ctest}"
LOG="$BUILD_DIR/Testing/Temporary/LastTest.log"
[ -f "$LOG" ] || { echo "test: $TITLE: no ctest log in $BUILD_DIR" >&2; exit 0; }
# Each test's block starts with "N/M Testing: NAME"; gtest prints "<file>:<line>: Skipped" and
# the message on the next line; ctest marks the skip with "Skip regular expression found".
awk -v title="$TITLE" '
  /^[0-9]+\/[0-9]+ Testing: / { name = $3; reason = ""; grab = 0; next }
  grab == 1 { if (reason == "") reason = $0; grab = 0 }
  /: Skipped$/ { grab = 1 }
  /^Skip regular expression found/ {
    order[++n] = name
    skipped[name] = reason == "" ? "(no reason printed)" : reason
  }
  END {
    if (n == 0) { printf "test: %s: no test skipped\n", title; exit }
    printf "test: %s: %d skipped:\n", title, n
    for (i = 1; i <= n; ++i) printf "  %s: %s\n", order[i], skipped[order[i]]
  }' "$LOG"
