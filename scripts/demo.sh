#!/usr/bin/env bash
# Build the core, then build and run the README's C quickstart against it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cmake -S . -B build/demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUTOIN_BUILD_TESTS=OFF >/dev/null
cmake --build build/demo >/dev/null
python3 scripts/extract_quickstart.py > build/demo/quickstart.c
cc -std=c11 build/demo/quickstart.c -Iabi/include -Icore/include build/demo/core/libfutoin_polyglot.a \
   -lpthread -o build/demo/quickstart
./build/demo/quickstart
