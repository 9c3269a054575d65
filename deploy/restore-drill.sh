#!/usr/bin/env bash
# Restore drill: start a node on a new data directory, write to it, back it
# up while it serves, write more and make an incremental backup since the
# first, verify the chain, restore it into a new directory, start a second
# node there with the first one's master key, and check that it serves the
# same accounts and that its read model matches its log.
# Usage: deploy/restore-drill.sh [path to tvsm] (make restore-drill builds it)
set -euo pipefail

tvsm=$(realpath "${1:-bin/tvsm}")
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
say() { printf '[restore-drill] %s\n' "$*"; }

export TVSM_ADMIN_LOGIN=drill TVSM_ADMIN_PASSWORD=drill-password
auth=(-u "$TVSM_ADMIN_LOGIN:$TVSM_ADMIN_PASSWORD" -H 'Content-Type: application/json')

# start_node LOG ARGS...: starts tvsm serve on a free port and sets url to
# its base URL once it answers /readyz.
start_node() {
  local log=$1; shift
  "$tvsm" serve --http 127.0.0.1:0 --log-format json "$@" >/dev/null 2>"$log" &
  pids+=($!)
  local addr=""
  for _ in $(seq 600); do
    addr=$(grep '"msg":"listening"' "$log" | sed -n 's/.*"addr":"\([^"]*\)".*/\1/p' | head -1 || true)
    if [ -n "$addr" ] && curl -sf "http://$addr/readyz" >/dev/null; then
      url="http://$addr"
      return
    fi
    sleep 0.1
  done
  say "node did not get ready; its log:" >&2
  cat "$log" >&2
  return 1
}

total() { curl -sf "${auth[@]}" "$1/api/provider/accounts?provider=$2&limit=1" | sed -n 's/.*"total":\([0-9]*\).*/\1/p'; }

start_node "$work/source.log" --data "$work/data"
src=$url
say "source node at $src"
provider=$(curl -sf "${auth[@]}" -d '{"name":"Drill ISP"}' "$src/api/admin/providers" | sed -n 's/^{"id":\([0-9]*\).*/\1/p')
for i in $(seq 50); do
  curl -sf "${auth[@]}" -d "{\"provider\":$provider,\"login\":\"drill-$i\",\"fullname\":\"Drill $i\",\"pin_md5\":\"81dc9bdb52d04dc20036dbd8313ed055\"}" \
    "$src/api/provider/accounts" >/dev/null
done
"$tvsm" backup --url "$src" --to "$work/backup"
"$tvsm" backup verify "$work/backup"
for i in $(seq 51 70); do
  curl -sf "${auth[@]}" -d "{\"provider\":$provider,\"login\":\"drill-$i\",\"fullname\":\"Drill $i\",\"pin_md5\":\"81dc9bdb52d04dc20036dbd8313ed055\"}" \
    "$src/api/provider/accounts" >/dev/null
done
want=$(total "$src" "$provider")
"$tvsm" backup --url "$src" --to "$work/incremental" --since "$work/backup"
"$tvsm" backup verify "$work/incremental"
"$tvsm" backup verify "$work/backup" "$work/incremental"
if "$tvsm" restore "$work/incremental" --data "$work/refused" 2>/dev/null; then
  say "FAIL: an incremental backup was restored without its full backup"
  exit 1
fi
"$tvsm" restore "$work/backup" "$work/incremental" --data "$work/restored"

start_node "$work/restored.log" --data "$work/restored" --master-key-file "$work/data.master-key"
dst=$url
say "restored node at $dst"
got=$(total "$dst" "$provider")
if [ "$got" != "$want" ]; then
  say "FAIL: the restored node holds $got accounts, the source $want"
  exit 1
fi
if ! curl -sf "${auth[@]}" "$dst/api/provider/accounts?provider=$provider&limit=0" | grep -q '"fullname":"Drill 70"'; then
  say "FAIL: the restored node does not read the accounts' personal data"
  exit 1
fi
"$tvsm" rebuild readmodel --verify --url "$dst" --poll 100ms
say "ok: $got accounts restored from a full and an incremental backup, personal data readable, read model matches the log"
