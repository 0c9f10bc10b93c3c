#!/usr/bin/env bash
# Builds the C steps library, runs every example and compares its output
# with the <example>.expected file next to it. Fails on the first mismatch.
#   bash node/examples/run-all.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if [ ! -f ../build/futoin_polyglot.node ]; then
    echo "== building the addon"
    (cd .. && node scripts/build.js)
fi
echo "== building csteps/libsteps.so"
bash csteps/build.sh

fail=0
for js in quickstart.js mixed-steps.js flow-from-c.js; do
    expected="${js%.js}.expected"
    echo "== $js"
    if ! out="$(node "$js" 2>&1)"; then
        echo "$out"
        echo "FAIL: $js exited with an error" >&2
        fail=1
        continue
    fi
    if ! diff -u "$expected" <(printf '%s\n' "$out"); then
        echo "FAIL: $js output differs from $expected" >&2
        fail=1
        continue
    fi
    echo "$out"
    echo "ok"
done
exit $fail
