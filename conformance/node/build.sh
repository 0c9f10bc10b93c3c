#!/bin/sh
# Builds the Node conformance runner's addon (ftnconf_node.node: libftnconf
# for JS, test tooling only) next to libftnconf.so of a cmake build:
#
#   sh conformance/node/build.sh build/ci       # -> build/ci/conformance/ftnconf_node.node
#
# The argument is the cmake build directory (or the directory holding
# libftnconf.so). libftnconf is built first when the directory is a cmake
# build without it. Headers: FUTOIN_NODE_INCLUDE, else those next to `node`.
# CC and CFLAGS are honoured; FUTOIN_WERROR=1 adds -Werror.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:?usage: build.sh CMAKE_BUILD_DIR}

if [ -f "$build/conformance/libftnconf.so" ]; then
  libdir="$build/conformance"
elif [ -f "$build/libftnconf.so" ]; then
  libdir="$build"
elif [ -f "$build/CMakeCache.txt" ]; then
  cmake --build "$build" --target ftnconf >&2
  libdir="$build/conformance"
else
  echo "build.sh: no libftnconf.so under $build; configure and build the repository first:" >&2
  echo "  cmake -S $root -B $build -G Ninja && cmake --build $build" >&2
  exit 1
fi
libdir=$(cd "$libdir" && pwd)

inc=${FUTOIN_NODE_INCLUDE:-}
if [ -z "$inc" ]; then
  node_bin=$(command -v node) || { echo "build.sh: node not found" >&2; exit 1; }
  inc="$(dirname "$node_bin")/../include/node"
fi
if [ ! -f "$inc/node_api.h" ]; then
  echo "build.sh: node_api.h not found in $inc (set FUTOIN_NODE_INCLUDE)" >&2
  exit 1
fi

werror=""
if [ "${FUTOIN_WERROR:-0}" = "1" ]; then
  werror="-Werror"
fi

out="$libdir/ftnconf_node.node"
# node_api symbols resolve against the node binary when the addon is loaded
${CC:-cc} -std=c11 -O2 -g -fPIC -shared ${CFLAGS:-} \
  -Wall -Wextra -Wshadow -Wstrict-prototypes $werror \
  -D_POSIX_C_SOURCE=200809L -DNAPI_VERSION=8 -DNODE_GYP_MODULE_NAME=ftnconf_node \
  -I"$inc" -I"$root/abi/include" -I"$root/conformance/c" \
  -o "$out" "$here/ftnconf_node.c" \
  -L"$libdir" -lftnconf -Wl,-rpath,'$ORIGIN'
echo "$out"
