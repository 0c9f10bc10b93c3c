#!/bin/sh
# The addon's instructions per operation, counted by callgrind (repeatable
# on a noisy host; the JIT's own code is not counted, only
# futoin_polyglot.node's):
#
#     bench/instr_node.sh external|execute [OPS]
#
# Needs valgrind and a built addon (cd node && node scripts/build.js).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$work/out" \
    node "$here/instr_node.js" "$@" > "$work/ops" 2> "$work/log" || {
    cat "$work/log" >&2
    exit 1
}
ops=$(tail -n 1 "$work/ops")
callgrind_annotate --threshold=100 "$work/out" 2>/dev/null | awk -v ops="$ops" -v w="$1" '
    /futoin_polyglot\.node/ { gsub(",", "", $1); n += $1 }
    END { printf "%s: %d operations, %.0f addon instructions per operation\n", w, ops, n / ops }'
