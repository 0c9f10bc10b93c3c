"""Roots are released once their flow ends and nobody holds them (a root's
own completion steps must not keep it alive through C memory)."""

import asyncio
import gc
import weakref

from futoin_polyglot import AsyncSteps


def test_awaited_roots_are_freed():
    refs = []

    async def main():
        for i in range(50):
            root = AsyncSteps().add(lambda as_, i=i: as_.success(i))
            refs.append(weakref.ref(root))
            assert await root == i
            del root

    asyncio.run(main())
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_blocking_run_root_is_freed(virtual_tool):
    root = AsyncSteps(virtual_tool).add(lambda as_: as_.success("x"))
    ref = weakref.ref(root)
    assert root.run() == "x"
    del root
    gc.collect()
    assert ref() is None


def test_failed_flow_root_is_freed(virtual_tool):
    seen = []
    root = AsyncSteps(virtual_tool).add(lambda as_: as_.error("Boom"))
    ref = weakref.ref(root)
    root.execute(lambda as_, code: seen.append(code))
    virtual_tool.run()
    del root
    gc.collect()
    assert seen == ["Boom"]
    assert ref() is None


def test_running_root_stays_alive_without_user_reference(virtual_tool):
    out = []
    root = AsyncSteps(virtual_tool)
    root.add(lambda as_: as_.set_timeout(1000), lambda as_, code: out.append(code))
    root.execute(lambda as_, code: None)
    del root  # the flow is still waiting for its timeout
    gc.collect()
    virtual_tool.run()
    assert out == ["Timeout"]
