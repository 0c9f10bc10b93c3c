#!/usr/bin/env bash
# Builds libsteps.so from steps.c against the FTN12 headers only (abi/include
# of the repository, or $FUTOIN_ABI_INCLUDE): no core linking. The library
# goes to node/build/examples/ (next to the addon, ignored by git), where the
# examples load it from.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
abi="${FUTOIN_ABI_INCLUDE:-$here/../../../abi/include}"
out="$here/../../build/examples"
if [ ! -f "$abi/futoin/binarysteps.h" ]; then
    echo "futoin/binarysteps.h not found in $abi (set FUTOIN_ABI_INCLUDE)" >&2
    exit 1
fi
mkdir -p "$out"
"${CC:-cc}" -std=c11 -Wall -Wextra -Werror -O2 -shared -fPIC -fvisibility=hidden \
    -I "$abi" "$here/steps.c" -o "$out/libsteps.so"
echo "built node/build/examples/libsteps.so"
