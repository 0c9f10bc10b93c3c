#!/bin/sh
# Build libsteps.so from steps.c against the FTN12 headers shipped inside the
# installed futoin_polyglot package (futoin_polyglot/include).
#
#   ./build.sh            -> clib/libsteps.so
#   CC=clang PYTHON=python3.12 ./build.sh
set -eu
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
CC=${CC:-cc}
INC=$("$PYTHON" -c "import futoin_polyglot,os;print(os.path.join(os.path.dirname(futoin_polyglot.__file__),'include'))")
"$CC" -std=c11 -O2 -Wall -Wextra -shared -fPIC -I"$INC" steps.c -o libsteps.so
echo "built $(pwd)/libsteps.so"
