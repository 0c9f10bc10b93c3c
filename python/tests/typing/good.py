"""Typed user code that must pass `mypy --strict` against the package's stubs."""

from __future__ import annotations

import asyncio

from futoin_polyglot import AsyncSteps, FutoInError, Limiter, Mutex, State, Throttle, Tool, errors, wrap


def fail(as_: AsyncSteps) -> int:
    as_.error(errors.InvalidRequest, "no int")  # always raises: nothing to return after it


def body(as_: AsyncSteps, i: int) -> None:
    if i == 3:
        as_.break_loop()
    as_.state["n"] = i


def step(as_: AsyncSteps, *values: object) -> None:
    st: State = as_.state
    st.x = len(values)
    as_.set_timeout(100)
    as_.set_cancel(lambda a: None)
    as_.add(lambda a: a.success(1, "b"), lambda a, code: a.success())
    as_.repeat(5, body).loop(lambda a: a.break_loop(), "L").for_each([1, 2], lambda a, k, v: None)
    as_.sync(Mutex(1), lambda a: None, lambda a, code: None)
    p = as_.parallel(lambda a, code: None)
    p.add(lambda a: None).add(lambda a: None)
    buf: bytearray = as_.stack(16)
    buf[0] = 1


def spec_names(as_: AsyncSteps) -> None:
    """The spec's names of the same methods."""
    st: State = as_.state()
    st.y = 1
    as_.setTimeout(100)
    as_.setCancel(lambda a: None)
    as_.waitExternal()
    as_.repeatLoop(2, lambda a, i: a.continueLoop()).makeLoop(lambda a: a.breakLoop())
    as_.forEach([1], lambda a, k, v: None).loopForEach({"k": 1}, lambda a, k, v: None)
    as_.successStep(1).copyFrom(AsyncSteps())
    other: AsyncSteps = as_.newInstance()
    print(other)


class Request(AsyncSteps):
    def __init__(self, request: str, tool: Tool | None = None) -> None:
        super().__init__(tool)
        self.request = request


async def main() -> object:
    root = AsyncSteps()
    root.add(step).sync(Throttle(10, 1000), lambda a: None).sync(Limiter(rate=5), lambda a: None)
    root.sync(Limiter({"concurrent": 2, "rate": 5}), lambda a: None)
    root.success_step(5).await_(asyncio.sleep(0)).copy_from(AsyncSteps())
    info: str = root.state.error_info
    exc: BaseException | None = root.state.last_exception
    print(info, exc)
    try:
        return await root.promise()
    except FutoInError as e:
        return e.args


def blocking() -> object:
    tool = Tool(virtual_time=True)
    r = Request("x", tool).add(step)
    r.execute(lambda as_, code: print(code))
    tool.run()
    other = wrap(r.binary())
    return other.new_instance().add(lambda a: a.success(2)).run()
