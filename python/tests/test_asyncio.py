"""asyncio integration: await as_, promise(), await_(), cancellation of the
awaited future, interleaving with asyncio I/O, many concurrent flows."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

import futoin_polyglot as fp
from futoin_polyglot import AsyncSteps, FutoInError, Tool, errors


def test_flows_run_on_each_event_loop(arun, request):
    # arun runs every asyncio test on asyncio's loop and on uvloop: each is
    # the loop the flow's steps and timers run on
    kind = request.node.callspec.params["arun"]

    async def main():
        loop = asyncio.get_running_loop()

        def step(as_):
            as_.set_timeout(10_000)
            loop.call_soon(as_.success, type(asyncio.get_running_loop()).__module__)

        return await AsyncSteps().add(step)

    assert arun(main()).split(".")[0] == kind


@pytest.mark.parametrize(
    "values, expected",
    [((), None), ((5,), 5), (("a", "b"), ("a", "b")), ((1, 2, 3, 4, 5), (1, 2, 3, 4, 5))],
)
def test_await_flow_result_shapes(arun, values, expected):
    async def main():
        as_ = AsyncSteps()
        as_.add(lambda as_: as_.success(*values))
        direct = await as_
        as_2 = AsyncSteps()
        as_2.success_step(*values)
        via_promise = await as_2.promise()
        return direct, via_promise

    assert arun(main()) == (expected, expected)


def test_promise_returns_asyncio_future(arun):
    async def main():
        as_ = AsyncSteps()
        as_.success_step("v")
        fut = as_.promise()
        assert isinstance(fut, asyncio.Future)
        # documented (promise()): like the JS reference, the first burst runs
        # right away, so a flow that needs no I/O is already done
        assert fut.done()
        waiting = AsyncSteps()
        waiting.await_(asyncio.sleep(0, result="w"))
        fut2 = waiting.promise()
        assert not fut2.done()
        return await fut, await fut2

    assert arun(main()) == ("v", "w")


def test_promise_from_inside_a_step_does_not_run_inline(arun):
    async def main():
        out = []
        inner_done = []

        def step(as_):
            inner = AsyncSteps()
            inner.add(lambda as_: out.append("inner step"))
            fut = inner.promise()
            inner_done.append(fut.done())
            out.append("outer step end")
            as_.await_(fut)

        as_ = AsyncSteps()
        as_.add(step)
        await as_
        return out, inner_done

    out, inner_done = arun(main())
    assert out == ["outer step end", "inner step"]
    assert inner_done == [False]


def test_promise_twice_is_internal_error(arun, capfd):
    async def main():
        as_ = AsyncSteps()
        as_.await_(asyncio.sleep(0, result=1))
        first = as_.promise()
        second = as_.promise()
        with pytest.raises(FutoInError) as ei:
            await second
        return await first, ei.value.code, ei.value.info

    assert arun(main()) == (1, "InternalError", "execute() called twice")
    # the second future has the error: nothing else reports it
    assert capfd.readouterr().err == ""


def test_await_flow_error_raises_futoin_error(arun):
    exc = ValueError("inner problem")

    async def main():
        as_ = AsyncSteps()
        as_.add(lambda as_: as_.error("Fails", "the info"))
        with pytest.raises(FutoInError) as e1:
            await as_
        as_2 = AsyncSteps()

        def step(as_):
            raise exc

        as_2.add(step)
        with pytest.raises(FutoInError) as e2:
            await as_2.promise()
        return e1.value, e2.value

    e1, e2 = arun(main())
    assert (e1.code, e1.info) == ("Fails", "the info")
    assert (e2.code, e2.info) == ("ValueError", "inner problem")
    assert e2.last_exception is exc


def test_flows_use_the_running_loops_tool(arun):
    async def main():
        as_ = AsyncSteps()
        return as_._tool is fp.get_tool(), fp.get_tool() is not None

    assert arun(main()) == (True, True)


def test_promise_of_flow_on_other_tool_is_refused(arun):
    async def main():
        as_ = AsyncSteps(Tool())
        as_.success_step(1)
        with pytest.raises(RuntimeError, match="the tool given to AsyncSteps"):
            as_.promise()
        return True

    assert arun(main())


def test_await_coroutine_result(arun):
    async def compute(x):
        await asyncio.sleep(0)
        return x * 2

    async def main():
        as_ = AsyncSteps()
        assert as_.await_(compute(20)) is as_
        as_.add(lambda as_, v: as_.success(v + 2))
        return await as_

    assert arun(main()) == 42


def test_await_future_result(arun):
    async def main():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        as_ = AsyncSteps()
        as_.await_(fut)
        as_.add(lambda as_, v: as_.success(("got", v)))
        loop.call_soon(fut.set_result, [1, 2])
        return await as_

    assert arun(main()) == ("got", [1, 2])


def test_await_none_result_gives_no_values(arun):
    async def nothing():
        return None

    async def main():
        as_ = AsyncSteps()
        as_.await_(nothing())
        as_.add(lambda as_, *args: as_.success(args))
        return await as_

    assert arun(main()) == ()


def test_await_inside_step_as_substep(arun):
    async def main():
        as_ = AsyncSteps()
        as_.add(lambda as_: as_.await_(asyncio.sleep(0, result="slept")))
        as_.add(lambda as_, v: as_.success(v.upper()))
        return await as_

    assert arun(main()) == "SLEPT"


def test_await_custom_awaitable(arun):
    class Awaitable:
        def __await__(self):
            yield from asyncio.sleep(0).__await__()
            return "custom"

    async def main():
        as_ = AsyncSteps()
        as_.await_(Awaitable())
        return await as_

    assert arun(main()) == "custom"


def test_await_rejection_is_promise_reject(arun):
    exc = LookupError("rejected value")

    async def fails():
        await asyncio.sleep(0)
        raise exc

    async def main():
        seen = {}
        as_ = AsyncSteps()

        def handler(as_, code):
            seen.update(code=code, info=as_.state.error_info, le=as_.state.last_exception)

        as_.await_(fails(), handler)
        with pytest.raises(FutoInError) as ei:
            await as_
        return seen, ei.value

    seen, err = arun(main())
    assert seen == {"code": errors.PromiseReject, "info": "rejected value", "le": exc}
    assert err.code == "PromiseReject"
    assert err.last_exception is exc


def test_await_futoin_error_keeps_code(arun):
    async def fails():
        raise FutoInError(errors.Unauthorized, "no token")

    async def main():
        as_ = AsyncSteps()
        as_.await_(fails(), lambda as_, code: as_.success(code, as_.state.error_info))
        return await as_

    assert arun(main()) == ("Unauthorized", "no token")


def test_await_cancelled_future_is_promise_reject(arun):
    async def main():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        as_ = AsyncSteps()
        as_.await_(fut, lambda as_, code: as_.success(code))
        loop.call_soon(fut.cancel)
        return await as_

    assert arun(main()) == "PromiseReject"


class HookedFuture(asyncio.Future):
    """A future that reports when a step started waiting on it."""

    def __init__(self, *, loop):
        super().__init__(loop=loop)
        self.hooked = loop.create_future()

    def add_done_callback(self, fn, *, context=None):
        super().add_done_callback(fn, context=context)
        if not self.hooked.done():
            self.hooked.set_result(True)


def test_cancelling_flow_cancels_awaited_future(arun):
    async def main():
        loop = asyncio.get_running_loop()
        fut = HookedFuture(loop=loop)
        as_ = AsyncSteps()
        as_.await_(fut)
        as_.add(lambda as_: pytest.fail("flow continued after cancel"))
        as_.promise()
        await fut.hooked  # the await_ step is waiting on it now
        as_.cancel()
        await asyncio.wait([fut])
        return fut.cancelled()

    assert arun(main()) is True


def test_cancelling_flow_cancels_awaited_coroutine(arun):
    async def main():
        loop = asyncio.get_running_loop()
        started = loop.create_future()
        finished = loop.create_future()

        async def long_job():
            started.set_result(True)
            try:
                await loop.create_future()  # never resolves
            except asyncio.CancelledError:
                finished.set_result("cancelled")
                raise

        as_ = AsyncSteps()
        as_.await_(long_job())
        as_.promise()
        await started
        as_.cancel()
        return await finished

    assert arun(main()) == "cancelled"


def test_sibling_failure_cancels_awaited_future(arun):
    async def main():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        as_ = AsyncSteps()
        p = as_.parallel()
        p.add(lambda as_: as_.await_(fut))
        p.add(lambda as_: as_.add(lambda as_: as_.error("Sibling")))
        with pytest.raises(FutoInError) as ei:
            await as_
        return ei.value.code, fut.cancelled()

    assert arun(main()) == ("Sibling", True)


def test_flow_interleaves_with_asyncio_queue(arun):
    async def main():
        q = asyncio.Queue()
        got = []

        async def producer():
            for i in range(5):
                await q.put(i)
                await asyncio.sleep(0)
            await q.put(None)

        def body(as_):
            as_.await_(q.get())

            def check(as_, item=None):
                if item is None:
                    as_.break_loop()
                got.append(item)

            as_.add(check)

        as_ = AsyncSteps()
        as_.loop(body)
        as_.add(lambda as_: as_.success(list(got)))
        result, _ = await asyncio.gather(as_.promise(), producer())
        return result

    assert arun(main()) == [0, 1, 2, 3, 4]


def test_wait_external_success_from_call_later(arun):
    async def main():
        loop = asyncio.get_running_loop()

        def step(as_):
            as_.wait_external()
            loop.call_later(0.001, as_.success, "later")

        as_ = AsyncSteps()
        as_.add(step)
        as_.add(lambda as_, v: as_.success(v + "!"))
        return await as_

    assert arun(main()) == "later!"


def test_many_concurrent_flows_with_gather(arun):
    async def main():
        order = []

        def make(i):
            as_ = AsyncSteps()
            as_.add(lambda as_: order.append(("a", i)))
            as_.await_(asyncio.sleep(0, result=i))
            as_.add(lambda as_, v: as_.success(v * v))
            return as_.promise()

        results = await asyncio.gather(*[make(i) for i in range(300)])
        return results, order

    results, order = arun(main())
    assert results == [i * i for i in range(300)]
    assert sorted(order) == [("a", i) for i in range(300)]


def test_flow_does_not_block_other_tasks(arun):
    async def main():
        ticks = []

        async def ticker():
            for i in range(3):
                ticks.append(i)
                await asyncio.sleep(0)

        def body(as_):
            as_.await_(asyncio.sleep(0))
            as_.add(lambda as_: as_.break_loop() if len(ticks) == 3 else None)

        as_ = AsyncSteps()
        as_.loop(body)
        await asyncio.gather(as_.promise(), ticker())
        return ticks

    assert arun(main()) == [0, 1, 2]


def test_error_handler_in_asyncio_and_recovery(arun):
    async def main():
        as_ = AsyncSteps()
        as_.add(lambda as_: as_.await_(asyncio.sleep(0)))
        as_.add(lambda as_: as_.error("E1"), lambda as_, c: as_.success("fixed " + c))
        return await as_

    assert arun(main()) == "fixed E1"


def test_tool_immediate_and_deferred_on_the_asyncio_loop(arun):
    async def main():
        tool = fp.get_tool()
        got = []
        done = asyncio.get_running_loop().create_future()
        tool.deferred(1, lambda: done.set_result(got))
        tool.immediate(lambda: got.append("immediate"))
        cancelled = tool.immediate(lambda: got.append("cancelled"))
        cancelled.cancel()
        return await done

    assert arun(main()) == ["immediate"]


def test_root_cancel_cancels_its_promise(arun):
    async def main():
        root = AsyncSteps()
        root.add(lambda as_: as_.wait_external())
        fut = root.promise()
        asyncio.get_running_loop().call_soon(root.cancel)
        await asyncio.wait([fut])  # leaves fut alone (a hang guard's cancel would not cancel it)
        return fut.cancelled(), len(fp._running)

    assert arun(main()) == (True, 0)


def test_cancelling_the_awaiting_task_cancels_the_flow(arun):
    async def main():
        log = []

        def wait(as_):
            as_.set_cancel(lambda as_: log.append("cancel handler"))
            as_.wait_external()

        root = AsyncSteps()
        root.add(wait)
        task = asyncio.ensure_future(root.promise())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        timed = AsyncSteps()
        timed.add(wait)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(timed.promise(), 0.001)
        return log, len(fp._running)

    assert arun(main()) == (["cancel handler", "cancel handler"], 0)


def test_run_inside_an_asyncio_step_is_a_runtime_error(arun):
    async def main():
        seen = []

        def outer(as_):
            try:
                AsyncSteps().add(lambda a: a.success("inner")).run()
            except RuntimeError as e:
                seen.append(str(e))
            as_.success("outer")

        return await AsyncSteps().add(outer), seen

    res, seen = arun(main())
    assert res == "outer" and len(seen) == 1 and "asyncio" in seen[0]


def test_sync_objects_made_before_any_loop_bind_to_the_loop_that_uses_them(arun):
    # asyncio.Lock() at module level works; so must these
    rate = fp.Throttle(1, 5)
    mutex = fp.Mutex()
    limiter = fp.Limiter(concurrent=1, max_queue=4, rate=1, period_ms=5, burst=4)

    async def main():
        flows = [AsyncSteps().add(lambda as_, i=i: as_.sync(obj, lambda a: a.success(i))).promise()
                 for obj in (rate, mutex, limiter) for i in range(3)]
        return await asyncio.gather(*flows)

    assert arun(main()) == [0, 1, 2] * 3

    # a second loop is another tool: a clear error, not a flow that hangs
    async def again():
        with pytest.raises(RuntimeError, match="another tool"):
            AsyncSteps().add(lambda as_: None).sync(rate, lambda a: None)

    arun(again())


def test_many_asyncio_runs_leave_no_loops_tools_or_descriptors_behind():
    # pytest-asyncio makes a loop per test: each run must clean up after itself
    import gc
    import os

    async def main():
        return await AsyncSteps().add(lambda as_: as_.success(1))

    def fds():
        return len(os.listdir("/proc/self/fd"))

    def loops():
        return sum(1 for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop))

    assert asyncio.run(main()) == 1
    gc.collect()
    before = (fds(), loops())
    for _ in range(60):
        assert asyncio.run(main()) == 1
    gc.collect()
    assert fds() <= before[0] + 1
    assert loops() <= before[1] + 1
    assert len(fp._drivers) <= 1


def test_root_cancelled_inside_its_first_burst_cancels_its_promise(arun):
    async def main():
        root = AsyncSteps()
        root.add(lambda as_: root.cancel())
        root.add(lambda as_: as_.success("never"))
        fut = root.promise()
        await asyncio.wait([fut])
        return fut.cancelled(), len(fp._running), len(fp._promised)

    assert arun(main()) == (True, 0, 0)


def test_timers_stopped_after_their_loop_closed_report_nothing(arun, monkeypatch):
    # stopping a step timeout or a Throttle period after asyncio.run() ended
    # called the driver's arm hook on the closed loop ("Event loop is closed")
    import gc

    from futoin_polyglot import Throttle

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(repr(u.exc_value)))
    box = {}

    async def main():
        def step(as_):
            as_.set_timeout(100000)

        AsyncSteps().add(step).execute()
        box["throttle"] = Throttle(1, 100000)
        await AsyncSteps().sync(box["throttle"], lambda as_: as_.success())

    asyncio.run(main())
    del box["throttle"]
    gc.collect()

    async def next_loop():
        return await AsyncSteps().add(lambda as_: as_.success("next"))

    assert arun(next_loop()) == "next"
    assert reported == []


def test_flows_left_waiting_by_asyncio_run_are_cancelled_with_its_loop(arun):
    # they stayed registered as running with their closures and state, and
    # their cancel handlers never ran (asyncio.run() cancels leftover tasks)
    import futoin_polyglot

    cancelled = []
    keys = []

    async def leave_one_waiting():
        root = AsyncSteps()
        root.add(lambda as_: as_.set_cancel(lambda as_: cancelled.append(True)))
        root.add(lambda as_: pytest.fail("went on after its loop closed"))
        root.promise()
        keys.append(id(root))

    async def next_loop():
        return await AsyncSteps().add(lambda as_: as_.success("next loop"))

    asyncio.run(leave_one_waiting())
    assert cancelled == []
    assert arun(next_loop()) == "next loop"
    assert cancelled == [True]
    assert keys[0] not in futoin_polyglot._running


def test_await_of_a_coroutine_never_reached_closes_it(arun):
    # the flow fails before the await_() step: its coroutine is closed, as
    # a task cancelled before it started would be, not left "never awaited"
    import gc
    import warnings

    started = []

    async def work():
        started.append(True)

    async def main():
        root = AsyncSteps()
        root.add(lambda as_: as_.error("Boom"))
        root.await_(work())
        with pytest.raises(FutoInError):
            await root

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        arun(main())
        gc.collect()
    assert started == []
    assert [str(w.message) for w in seen if "never awaited" in str(w.message)] == []


def test_await_of_a_coroutine_in_a_model_copied_twice(arun):
    # a coroutine runs once: the second copy's step fails with a clear error
    async def work():
        return "done"

    async def main():
        model = AsyncSteps()
        model.await_(work())
        first = AsyncSteps().copy_from(model)
        assert await first == "done"
        second = AsyncSteps().copy_from(model)
        with pytest.raises(FutoInError) as e:
            await second
        assert e.value.code == errors.InternalError
        assert "awaited already" in e.value.info

    arun(main())



def test_keyboard_interrupt_in_an_awaited_flow_leaves_no_unretrieved_future():
    # it leaves asyncio.run(); its promise's FutoInError was reported at exit
    # as "Future exception was never retrieved"
    import subprocess

    code = (
        "import asyncio\n"
        "from futoin_polyglot import AsyncSteps\n"
        "def s(as_):\n"
        "    raise KeyboardInterrupt()\n"
        "async def main():\n"
        "    await AsyncSteps().add(s)\n"
        "try:\n"
        "    asyncio.run(main())\n"
        "except KeyboardInterrupt:\n"
        "    print('left')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "left"
    assert "never retrieved" not in r.stderr


def test_await_future_of_another_loop_fails_the_flow(arun):
    other = asyncio.new_event_loop()
    try:
        async def main():
            fut = other.create_future()  # would never wake this loop
            as_ = AsyncSteps()
            as_.await_(fut, lambda as_, code: as_.success(code))
            return await as_

        assert arun(main()) == "ValueError"
    finally:
        other.close()


def test_flows_left_waiting_by_asyncio_run_in_threads_that_ended_go(arun):
    # a thread pool's asyncio.run() leaving a flow waiting kept it, its
    # closures and its tool for good: that thread never started a loop again
    import threading

    import futoin_polyglot

    cancelled = []
    keys = []

    async def leave_one_waiting():
        root = AsyncSteps()
        root.add(lambda as_: as_.set_cancel(lambda as_: cancelled.append(True)))
        root.execute()
        keys.append(id(root))

    threads = [threading.Thread(target=asyncio.run, args=(leave_one_waiting(),)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def next_loop():
        return await AsyncSteps().add(lambda as_: as_.success("next loop"))

    assert arun(next_loop()) == "next loop"
    assert cancelled == [True] * 8
    assert not set(keys) & set(futoin_polyglot._running)


_request = __import__("contextvars").ContextVar("request", default=None)


def test_steps_run_in_the_context_of_their_own_flow(arun):
    # two flows resumed by awaits completing in the same loop turn: each
    # step sees its own flow's context vars, as each task's code does
    async def one(n):
        _request.set(n)
        seen = []
        as_ = AsyncSteps()
        as_.add(lambda as_: (seen.append(_request.get()), as_.await_(asyncio.sleep(0))))
        as_.add(lambda as_, *_: (seen.append(_request.get()), _request.set(n * 10)))
        as_.add(lambda as_: as_.error("Bad"), lambda as_, code: (seen.append(_request.get()), as_.success()))
        await as_
        seen.append(_request.get())  # as after awaiting a task: its changes stay in it
        return seen

    async def main():
        return await asyncio.gather(one(1), one(2), one(3))

    assert arun(main()) == [[1, 1, 10, 1], [2, 2, 20, 2], [3, 3, 30, 3]]


def test_a_flow_context_is_copied_at_execute(arun):
    # like a task: a copy of the context execute() ran in, new each run
    # (cancel handlers and awaited coroutines see it too)
    async def read():
        return _request.get()

    async def main():
        _request.set("outer")
        seen = []
        as_ = AsyncSteps()

        def step(as_):
            seen.append(_request.get())
            _request.set("inner")
            as_.await_(read())

        as_.add(step)
        reached = asyncio.Event()
        as_.add(lambda as_, v: (seen.append(v), as_.set_cancel(lambda as_: seen.append(_request.get())),
                                as_.wait_external(), reached.set()))
        as_.promise()
        await reached.wait()
        as_.cancel()
        seen.append(_request.get())
        _request.set("second")
        as_.add(lambda as_: seen.append(_request.get()))
        await as_
        return seen

    assert arun(main()) == ["outer", "inner", "inner", "outer", "second"]


def test_blocking_run_uses_a_copy_of_the_callers_context():
    token = _request.set("caller")
    seen = []
    as_ = AsyncSteps(Tool())
    as_.add(lambda as_: (seen.append(_request.get()), _request.set("step")))
    as_.add(lambda as_: seen.append(_request.get()))
    as_.run()
    try:
        assert seen == ["caller", "step"]
        assert _request.get() == "caller"
    finally:
        _request.reset(token)


def test_tool_callbacks_run_in_the_context_they_were_scheduled_in(arun):
    # as loop.call_soon()/call_later(): a copy of the scheduler's context
    async def main():
        tool = fp.get_tool()
        got = []
        done = asyncio.get_running_loop().create_future()

        def seen():
            got.append(_request.get())
            if len(got) == 3:
                done.set_result(sorted(got))

        def schedule(value, delay):
            token = _request.set(value)
            if delay is None:
                tool.immediate(seen)
            else:
                tool.deferred(delay, seen)
            _request.reset(token)

        schedule("a", None)
        schedule("b", 1)
        schedule("c", None)
        return await done

    assert arun(main()) == ["a", "b", "c"]


class LockLog(fp.ISync):
    def __init__(self, log):
        self.log = log

    def lock(self, as_):
        self.log.append("lock")

    def unlock(self, as_):
        self.log.append("unlock")


def test_a_root_made_before_any_loop_is_awaited_on_the_loop_that_awaits_it(arun):
    # as a coroutine made outside asyncio.run() runs in it: the idle root
    # moves to that loop's tool with its steps and state
    log = []
    as_ = AsyncSteps()
    as_.state.greeting = "hello"
    as_.add(lambda as_: as_.await_(asyncio.sleep(0)))
    p = as_.parallel()
    p.add(lambda as_: log.append("branch"))
    as_.repeat(2, lambda as_, i: log.append(i))
    as_.sync(LockLog(log), lambda as_: log.append("locked"))
    as_.add(lambda as_: as_.success(as_.state.greeting))

    state = as_.state

    async def main():
        return await as_

    assert arun(main()) == "hello"
    assert log == ["branch", 0, 1, "lock", "locked", "unlock"]
    assert as_.state is state
    # and again in the next loop (a root run in a loop now closed)
    as_.add(lambda as_: as_.await_(asyncio.sleep(0, result="again")))
    assert arun(main()) == "again"


def test_a_root_made_outside_a_loop_keeps_its_blocking_tool_for_run():
    tool = Tool()
    as_ = AsyncSteps(tool)
    as_.add(lambda as_: as_.success(1))
    assert as_.run() == 1
    assert as_._tool is tool


def test_a_root_made_in_a_loop_that_ended_runs_blocking_on_this_thread(arun):
    async def make():
        as_ = AsyncSteps()
        as_.state.n = 6
        as_.add(lambda as_: as_.success(as_.state.n + 1))
        return as_

    as_ = arun(make())
    assert as_.run() == 7


def test_a_root_whose_binary_pointer_was_handed_out_stays_on_its_tool(arun):
    # C code may hold the pointer (and have added steps Python never saw)
    as_ = AsyncSteps()
    as_.add(lambda as_: as_.success(1))
    as_.binary()

    async def main():
        with pytest.raises(RuntimeError, match="binary"):
            await as_
        return True

    assert arun(main())
    assert as_.run() == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX only")
def test_a_child_forked_inside_a_running_loop_runs_no_loop():
    # the child has a copy of the loop, not running: promise() has no loop
    # there, run() blocks on the child's own tool
    async def main():
        await AsyncSteps().add(lambda as_: as_.success())
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                try:
                    AsyncSteps().promise()
                except RuntimeError:
                    code = 0 if AsyncSteps().add(lambda as_: as_.success(5)).run() == 5 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)

    assert asyncio.run(main()) == 0
