#!/usr/bin/env bash
# The production start against the development one: time to the ready line and the resident memory
# of the whole process tree once ready, for `intake serve` from dist/ and through tsx.
#   npm run build && bash bench/start.sh
set -euo pipefail
cd "$(dirname "$0")/.."

measure() {
  local label=$1
  shift
  local dir log pid started ready rss=0 count=0
  dir=$(mktemp -d)
  log=$(mktemp)
  started=$(date +%s%N)
  PORT=0 DATA_DIR=$dir LOG_LEVEL=warn "$@" >"$log" 2>&1 &
  pid=$!
  until grep -q "Background worker" "$log"; do sleep 0.1; done
  ready=$(date +%s%N)
  sleep 2
  tree() {
    echo "$1"
    for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree "$child"; done
  }
  for p in $(tree "$pid"); do
    rss=$((rss + $(awk '/VmRSS/{print $2}' /proc/"$p"/status)))
    count=$((count + 1))
  done
  echo "$label: ready in $(((ready - started) / 1000000)) ms, $count processes, RSS $((rss / 1024)) MiB"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir" "$log"
}

[ -f dist/main.js ] || { echo "run npm run build first" >&2; exit 1; }
measure "dist (node bin/intake.js serve)" node bin/intake.js serve
measure "tsx  (tsx src/cli.ts serve)" node node_modules/tsx/dist/cli.mjs src/cli.ts serve
