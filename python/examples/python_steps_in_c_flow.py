#!/usr/bin/env python3
"""C code adding steps, Python among them, to a flow it gets as a pointer.

``lib_add_steps`` (clib/steps.c) receives a ``FutoInAsyncSteps*`` (from
``as_.binary()``) and calls ``api->add`` itself: first its own C step
``c_double``, then a Python step handed over as an FTN12 execute callback
plus data, made by ``futoin_polyglot.StepHandle``.

    python3 python_steps_in_c_flow.py   (builds clib/libsteps.so if missing)
"""

import asyncio
import ctypes
import os
import subprocess
import sys

from futoin_polyglot import AsyncSteps, StepHandle

HERE = os.path.dirname(os.path.abspath(__file__))


def load_clib() -> ctypes.CDLL:
    so = os.path.join(HERE, "clib", "libsteps.so")
    if not os.path.exists(so):
        subprocess.run(["sh", os.path.join(HERE, "clib", "build.sh")], check=True,
                       env=dict(os.environ, PYTHON=sys.executable), stdout=subprocess.DEVNULL)
    lib = ctypes.CDLL(so)
    # void lib_add_steps(FutoInAsyncSteps* bsi, FutoInAsyncSteps_execute_callback py_step, void* py_data)
    lib.lib_add_steps.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.lib_add_steps.restype = None
    return lib


def py_step(as_, value):
    print(f"Python step (added by C) got {value}")
    as_.success(value + 1)


async def on_asyncio(lib, handle) -> None:
    flow = AsyncSteps()
    flow.add(lambda as_: as_.success(20))
    # C adds to the root, before it runs: c_double, then py_step
    lib.lib_add_steps(flow.binary(), handle.execute_callback, handle.data)

    # C adds inner steps from inside a running Python step
    def outer(as_, value):
        as_.add(lambda as_: as_.success(value * 10))
        lib.lib_add_steps(as_.binary(), handle.execute_callback, handle.data)

    flow.add(outer)
    result = await flow  # 20 -> 40 -> 41 -> 410 -> 820 -> 821
    print(f"asyncio flow result: {result}")


def blocking(lib, handle) -> None:
    flow = AsyncSteps()  # no loop running: the thread's blocking tool
    flow.add(lambda as_: as_.success(5))
    lib.lib_add_steps(flow.binary(), handle.execute_callback, handle.data)
    print(f"blocking flow result: {flow.run()}")  # 5 -> 10 -> 11


def main() -> None:
    lib = load_clib()
    handle = StepHandle(py_step)  # keep it alive until the steps ran
    try:
        asyncio.run(on_asyncio(lib, handle))
        blocking(lib, handle)
    finally:
        handle.close()


if __name__ == "__main__":
    main()
