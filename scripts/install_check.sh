#!/usr/bin/env bash
# Install the core to a temporary prefix and build the README's C quickstart
# against it three ways: plain cc flags, pkg-config, and find_package().
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/ci}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
python3 "$root/scripts/extract_quickstart.py" > "$work/quickstart.c"
libdir=$(ls -d "$work/prefix"/lib*/ | head -n1)

cc -std=c11 -Wall -Wextra -Werror "$work/quickstart.c" -I"$work/prefix/include" -L"$libdir" \
   -lfutoin_polyglot -lpthread -Wl,-rpath,"$libdir" -o "$work/qs_plain"
test "$("$work/qs_plain")" = "hello, world"

# the static archive links without LTO too (its objects carry machine code,
# not only the compiler's LTO bytecode), as with another compiler
cc -std=c11 -fno-lto "$work/quickstart.c" -I"$work/prefix/include" "$libdir/libfutoin_polyglot.a" -lpthread \
   -o "$work/qs_static_nolto"
test "$("$work/qs_static_nolto")" = "hello, world"
if command -v clang >/dev/null; then
  clang -std=c11 "$work/quickstart.c" -I"$work/prefix/include" "$libdir/libfutoin_polyglot.a" -lpthread \
     -o "$work/qs_static_clang"
  test "$("$work/qs_static_clang")" = "hello, world"
fi

PKG_CONFIG_PATH="$libdir/pkgconfig" cc -std=c11 "$work/quickstart.c" \
   $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs futoin_polyglot) -lpthread \
   -Wl,-rpath,"$libdir" -o "$work/qs_pc"
test "$("$work/qs_pc")" = "hello, world"

mkdir -p "$work/cm"
cat > "$work/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(qs C)
find_package(futoin_polyglot REQUIRED)
add_executable(qs_shared "$work/quickstart.c")
target_link_libraries(qs_shared PRIVATE futoin_polyglot::futoin_polyglot)
add_executable(qs_static "$work/quickstart.c")
target_link_libraries(qs_static PRIVATE futoin_polyglot::static)
CM
cmake -S "$work/cm" -B "$work/cm/b" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cm/b" >/dev/null
test "$("$work/cm/b/qs_shared")" = "hello, world"
test "$("$work/cm/b/qs_static")" = "hello, world"

# only the documented entry points are exported
extra=$(nm -D --defined-only "$libdir/libfutoin_polyglot.so" | awk '$2=="T"{print $3}' | grep -v '^futoin_' || true)
test -z "$extra" || { echo "unexpected exported symbols: $extra"; exit 1; }
readelf -d "$libdir/libfutoin_polyglot.so" | grep -q 'SONAME.*libfutoin_polyglot.so.1'
echo "install check: plain, static without LTO, pkg-config, find_package (shared and static) all print 'hello, world'"
