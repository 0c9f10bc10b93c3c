"""Shared helpers for the futoin_polyglot test suite.

The ``virtual_tool`` fixture comes from the package's own pytest plugin
(the ``pytest11`` entry point ``futoin_polyglot.testing``).

Rules kept by every test: no sleeps as synchronisation (threading.Event,
Thread.join and asyncio futures instead), no assertions on wall-clock
durations, virtual time for timeouts. The only wall-clock number below is a
hang guard: a broken build must fail a test instead of stalling the suite.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

# Only used so that a bug that leaves a flow pending fails the test instead of
# hanging the whole run; no test depends on how fast anything completes.
HANG_GUARD_S = 30.0

# the event loops every asyncio test runs on: asyncio's own, and uvloop (a
# test dependency, python/pyproject.toml), which many asyncio programs use
# instead: the driver must use only the public loop API
LOOP_RUNNERS = {"asyncio": asyncio.run}
if sys.platform != "win32":  # uvloop has no Windows build
    import uvloop

    LOOP_RUNNERS["uvloop"] = uvloop.run


def run_async(coro, runner=asyncio.run):
    """Run ``coro`` on a fresh event loop, failing (not hanging) on a bug."""

    async def guarded():
        return await asyncio.wait_for(coro, HANG_GUARD_S)

    return runner(guarded())


@pytest.fixture(params=sorted(LOOP_RUNNERS))
def arun(request):
    runner = LOOP_RUNNERS[request.param]
    return lambda coro: run_async(coro, runner)
