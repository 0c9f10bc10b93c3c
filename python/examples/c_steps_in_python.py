#!/usr/bin/env python3
"""C steps inside a Python flow, on asyncio.

The C step ``c_double`` (clib/steps.c) is loaded by symbol with ctypes and
added to the flow as ``futoin_polyglot.CStep(address)``: the engine calls it
directly, no Python trampoline. Values cross as FTN12 binary values: a
Python int becomes an INT64 for C, the INT64 the C step returns becomes a
Python int again.

    python3 c_steps_in_python.py        (builds clib/libsteps.so if missing)
"""

import asyncio
import ctypes
import os
import subprocess
import sys

from futoin_polyglot import AsyncSteps, CStep

HERE = os.path.dirname(os.path.abspath(__file__))


def load_clib() -> ctypes.CDLL:
    so = os.path.join(HERE, "clib", "libsteps.so")
    if not os.path.exists(so):
        subprocess.run(["sh", os.path.join(HERE, "clib", "build.sh")], check=True,
                       env=dict(os.environ, PYTHON=sys.executable), stdout=subprocess.DEVNULL)
    return ctypes.CDLL(so)


async def main() -> None:
    lib = load_clib()
    address = ctypes.cast(lib.c_double, ctypes.c_void_p).value
    assert address is not None
    c_double = CStep(address, keep=lib)  # keep: the library stays loaded

    # 1. Python -> C -> Python -> C
    def show(as_, value):
        print(f"Python step got {value} from c_double")
        as_.success(value + 1)

    flow = AsyncSteps()
    flow.add(lambda as_: as_.success(21))  # 21 travels as INT64
    flow.add(c_double)                      # C: 42
    flow.add(show)                          # Python: 43
    flow.add(c_double)                      # C: 86
    result = await flow
    print(f"flow result: {result}")

    # 2. the C step fails (not an integer); a Python handler recovers
    def guarded(as_):
        as_.add(lambda as_: as_.success("twenty-one"))
        as_.add(c_double)

    def on_error(as_, code):
        print(f"c_double failed: {code}: {as_.state.error_info}")
        as_.success(-1)

    result = await AsyncSteps().add(guarded, on_error)
    print(f"recovered flow result: {result}")

    # 3. C steps inside a repeat body, many flows at once
    def body(as_, i):
        as_.add(lambda as_: as_.success(i))
        as_.add(c_double)
        as_.add(lambda as_, v: total.append(v))

    total: list[int] = []
    await asyncio.gather(*[AsyncSteps().repeat(10, body) for _ in range(3)])
    print(f"3 flows x repeat(10) through c_double: sum = {sum(total)}")


if __name__ == "__main__":
    asyncio.run(main())
