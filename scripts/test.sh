#!/usr/bin/env bash
# Run all tests: warnings-as-errors build + ctest (unit tests, conformance),
# install/quickstart check, the same with clang, valgrind, then everything
# again under ASan+UBSan.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)

echo "== build (warnings are errors)"
cmake -S . -B build/ci -G Ninja -DFUTOIN_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/ci -j "$jobs"
echo "== unit tests and conformance"
ctest --test-dir build/ci --output-on-failure -j "$jobs"

echo "== install, pkg-config and find_package"
./scripts/install_check.sh build/ci

echo "== clang build (warnings are errors), unit tests and conformance"
CC=clang CXX=clang++ cmake -S . -B build/clang -G Ninja -DFUTOIN_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFUTOIN_BUILD_BENCH=OFF >/dev/null
cmake --build build/clang -j "$jobs"
ctest --test-dir build/clang --output-on-failure -j "$jobs"

echo "== valgrind (leaks and memory errors)"
for t in build/ci/tests/test_*; do
  valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 "$t" >/dev/null 2>build/ci/valgrind.log \
    || { cat build/ci/valgrind.log; echo "valgrind failed: $t"; exit 1; }
  echo "valgrind clean: $(basename "$t")"
done
valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \
  build/ci/conformance/conformance_c conformance/scenarios >/dev/null 2>build/ci/valgrind.log \
  || { cat build/ci/valgrind.log; echo "valgrind failed: conformance_c"; exit 1; }
echo "valgrind clean: conformance_c"

echo "== Python package: pip install ./python, pytest, conformance-py"
python3 -m pip install -q ./python
( cd "$(mktemp -d)" && python3 -m pytest -q -p no:cacheprovider "$root/python/tests" )
( cd "$(mktemp -d)" && python3 "$root/conformance/python/runner.py" \
    --ftnconf "$root/build/ci/conformance/libftnconf.so" "$root/conformance/scenarios" ) > build/ci/conformance-py.log \
  || { cat build/ci/conformance-py.log; exit 1; }
grep -v '^pass' build/ci/conformance-py.log || true
echo "Python tests and conformance again under the debug allocator (use after free, overruns)"
( cd "$(mktemp -d)" && PYTHONMALLOC=debug python3 -X dev -m pytest -q -p no:cacheprovider "$root/python/tests" \
    && PYTHONMALLOC=debug python3 "$root/conformance/python/runner.py" \
      --ftnconf "$root/build/ci/conformance/libftnconf.so" "$root/conformance/scenarios" | tail -n1 )
python3 scripts/extract_quickstart.py python > build/ci/quickstart.py
test "$(cd /tmp && python3 "$root/build/ci/quickstart.py" | head -n1)" = "data:42"
echo "README Python quickstart runs as written"

echo "== Node package: npm install ./node, node --test, conformance-js"
node_tmp=$(mktemp -d)
( cd "$node_tmp" && npm init -y >/dev/null && FUTOIN_WERROR=1 npm install --no-audit --no-fund "$root/node" )
( cd "$node_tmp" && node -e "require('futoin-polyglot')().add((as) => as.success(42)).promise().then((v) => { if (v !== 42) process.exit(1); })" )
( cd "$root/node" && node --test test/*.test.js ) # a directory argument: not on Node 22+
sh conformance/node/build.sh "$root/build/ci" >/dev/null
( cd "$node_tmp" && node "$root/conformance/node/runner.js" \
    --ftnconf "$root/build/ci/conformance/libftnconf.so" "$root/conformance/scenarios" ) > build/ci/conformance-js.log \
  || { cat build/ci/conformance-js.log; exit 1; }
grep -v '^pass' build/ci/conformance-js.log || true
bash node/examples/run-all.sh
# the declarations as a TypeScript user gets them from the installed package
( cd "$node_tmp" && npm install --no-audit --no-fund --no-save typescript@5 >/dev/null \
    && cp "$root/node/test/types/user.ts" . && npx tsc --strict --noEmit --target es2020 --module commonjs user.ts )
echo "Node type declarations pass tsc --strict"
python3 scripts/extract_quickstart.py js > "$node_tmp/quickstart.js"
test "$(cd "$node_tmp" && node quickstart.js | tr '\n' '|')" = "data:42|handled MyError handled below|"
echo "README Node quickstart runs as written"

echo "== ASan + UBSan"
cmake -S . -B build/asan -G Ninja -DFUTOIN_WERROR=ON -DFUTOIN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DFUTOIN_BUILD_BENCH=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"

echo "== ThreadSanitizer (cross-thread posts, wake-ups, sync primitives)"
cmake -S . -B build/tsan -G Ninja -DFUTOIN_WERROR=ON -DCMAKE_BUILD_TYPE=Debug -DFUTOIN_BUILD_BENCH=OFF \
  "-DCMAKE_C_FLAGS=-fsanitize=thread -fno-omit-frame-pointer" "-DCMAKE_CXX_FLAGS=-fsanitize=thread" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread" \
  "-DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=thread" >/dev/null
cmake --build build/tsan -j "$jobs"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --test-dir build/tsan --output-on-failure -j "$jobs"

echo "== Node addon under ASan + UBSan"
node_inc=$(node -p "require('path').join(require('path').dirname(process.execPath), '..', 'include', 'node')")
cmake -S node -B build/node-asan -G Ninja -DNODE_INCLUDE_DIR="$node_inc" -DCMAKE_BUILD_TYPE=Debug -DFUTOIN_WERROR=ON \
  "-DCMAKE_C_FLAGS=-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" >/dev/null
cmake --build build/node-asan -j "$jobs"
( cd node && FUTOIN_POLYGLOT_ADDON="$root/build/node-asan/futoin_polyglot.node" \
    LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    node --test test/*.test.js )

echo "== all tests passed"
