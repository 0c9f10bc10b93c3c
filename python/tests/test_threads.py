"""Completion from other Python threads: success()/error()/cancel() from a
worker thread continue the flow on the loop thread, in blocking mode (with
tool.ref()/unref()) and in asyncio mode."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest

from futoin_polyglot import AsyncSteps, FutoInError, Tool, get_tool


def worker(target):
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


# ---- blocking mode ----


def test_a_system_exit_leaves_the_run_of_its_own_thread_only():
    # it was kept for the whole process: another thread's run() raised it
    out = {}
    a_waits = threading.Event()
    b_done = threading.Event()

    def thread_a():
        def fatal(as_):
            raise SystemExit("raised in A")

        def wait_for_b(as_):
            a_waits.set()
            b_done.wait()

        flow = AsyncSteps(Tool()).add(fatal, lambda as_, code: as_.success()).add(wait_for_b)
        try:
            flow.run()
            out["a"] = "no exception"
        except SystemExit as e:
            out["a"] = str(e)

    t = worker(thread_a)
    a_waits.wait()
    try:
        out["b"] = AsyncSteps(Tool()).add(lambda as_: as_.success("b ran")).run()
    except SystemExit as e:
        out["b"] = "SystemExit: " + str(e)
    finally:
        b_done.set()
    t.join()
    assert out == {"a": "raised in A", "b": "b ran"}


def test_blocking_success_from_thread():
    tool = Tool()
    seen = {}
    payload = object()
    threads = []

    def step(as_):
        as_.wait_external()
        tool.ref()

        def work():
            try:
                seen["same_in_thread"] = as_.is_same_thread()
                seen["worker"] = threading.get_ident()
                as_.success(payload, 7)
            finally:
                tool.unref()

        threads.append(worker(work))

    def next_step(as_, obj, n):
        seen["next_thread"] = threading.get_ident()
        seen["same_in_next"] = as_.is_same_thread()
        as_.success(obj, n)

    as_ = AsyncSteps(tool)
    as_.add(step)
    as_.add(next_step)
    result = as_.run()
    threads[0].join()
    assert result[0] is payload and result[1] == 7
    assert seen["same_in_thread"] is False
    assert seen["next_thread"] == threading.get_ident() != seen["worker"]
    assert seen["same_in_next"] is True


def test_blocking_error_from_thread_after_step_returned():
    tool = Tool()
    go = threading.Event()
    seen = {}
    threads = []

    def step(as_):
        as_.wait_external()
        tool.ref()

        def work():
            try:
                go.wait()
                try:
                    as_.error("ThreadErr", "from worker")
                except FutoInError as e:
                    seen["raised_in_thread"] = e.code
            finally:
                tool.unref()

        threads.append(worker(work))

    def handler(as_, code):
        seen["handler"] = (code, as_.state.error_info, threading.get_ident())
        as_.success("recovered")

    as_ = AsyncSteps(tool)
    as_.add(step, handler)
    as_.add(lambda as_, v: seen.__setitem__("next", v))
    as_.execute(lambda as_, code: seen.__setitem__("unhandled", code))
    tool.iterate()  # runs `step`; it has returned when iterate() returns
    go.set()
    tool.run()
    threads[0].join()
    assert seen["raised_in_thread"] == "ThreadErr"
    assert seen["handler"] == ("ThreadErr", "from worker", threading.get_ident())
    assert seen["next"] == "recovered"
    assert "unhandled" not in seen


@pytest.mark.parametrize("how", ["success", "error"])
def test_blocking_completion_from_thread_while_step_still_running(how):
    """The worker completes the step before the loop thread has returned from
    the step's callback (a worker that is simply fast). success() and
    handle_error() are "any thread" calls: both must reach the flow."""
    tool = Tool()
    seen = {}

    def step(as_):
        as_.wait_external()

        def work():
            seen["same_in_thread"] = as_.is_same_thread()
            if how == "success":
                as_.success("from worker")
            else:
                try:
                    as_.error("WorkerErr", "early")
                except FutoInError as e:
                    seen["raised_in_thread"] = e.code

        t = threading.Thread(target=work)
        t.start()
        t.join()  # deterministic: the worker finishes inside this callback

    def handler(as_, code):
        as_.success("handled " + code + ": " + as_.state.error_info)

    as_ = AsyncSteps(tool)
    as_.add(step, handler)
    as_.add(lambda as_, v: as_.success(v, threading.get_ident()))
    result = as_.run()
    assert seen["same_in_thread"] is False
    expected = "from worker" if how == "success" else "handled WorkerErr: early"
    assert result == (expected, threading.get_ident())


def test_blocking_many_threads_complete_many_flows():
    tool = Tool()
    results = []
    threads = []

    for i in range(20):
        def step(as_, i=i):
            as_.wait_external()
            tool.ref()

            def work():
                try:
                    as_.success(i * 3)
                finally:
                    tool.unref()

            threads.append(worker(work))

        as_ = AsyncSteps(tool)
        as_.add(step)
        as_.add(lambda as_, v: results.append((v, threading.get_ident())))
        as_.execute()
    tool.run()
    for t in threads:
        t.join()
    assert sorted(v for v, _ in results) == [i * 3 for i in range(20)]
    assert {tid for _, tid in results} == {threading.get_ident()}


# ---- asyncio mode ----


def test_asyncio_success_from_thread(arun):
    async def main():
        seen = {}
        threads = []

        def step(as_):
            as_.wait_external()

            def work():
                seen["same_in_thread"] = as_.is_same_thread()
                seen["worker"] = threading.get_ident()
                as_.success("threaded")

            threads.append(worker(work))

        as_ = AsyncSteps()
        as_.add(step)
        as_.add(lambda as_, v: as_.success(v, threading.get_ident(), as_.is_same_thread()))
        result = await as_
        threads[0].join()
        return result, seen

    (value, tid, same), seen = arun(main())
    assert value == "threaded"
    assert tid == threading.get_ident() != seen["worker"]
    assert same is True
    assert seen["same_in_thread"] is False


def test_asyncio_error_from_thread_after_step_returned(arun):
    async def main():
        loop = asyncio.get_running_loop()
        seen = {}
        threads = []

        def step(as_):
            as_.wait_external()

            def work():
                try:
                    as_.error("AsyncThreadErr", "worker info")
                except FutoInError as e:
                    seen["raised_in_thread"] = e.code

            # started from the loop after this callback has returned
            loop.call_soon(lambda: threads.append(worker(work)))

        def handler(as_, code):
            as_.success(code, as_.state.error_info, threading.get_ident())

        as_ = AsyncSteps()
        as_.add(step, handler)
        result = await as_
        threads[0].join()
        return result, seen

    result, seen = arun(main())
    assert result == ("AsyncThreadErr", "worker info", threading.get_ident())
    assert seen["raised_in_thread"] == "AsyncThreadErr"


def test_asyncio_error_from_thread_while_step_still_running(arun):
    async def main():
        def step(as_):
            as_.wait_external()

            def work():
                try:
                    as_.error("EarlyErr", "fast worker")
                except FutoInError:
                    pass

            t = threading.Thread(target=work)
            t.start()
            t.join()

        as_ = AsyncSteps()
        as_.add(step, lambda as_, code: as_.success(code, as_.state.error_info))
        return await as_

    assert arun(main()) == ("EarlyErr", "fast worker")


def test_asyncio_cancel_from_thread(arun):
    async def main():
        loop = asyncio.get_running_loop()
        cancelled = loop.create_future()
        waiting = loop.create_future()
        out = []

        def step(as_):
            as_.set_cancel(lambda as_: cancelled.set_result(threading.get_ident()))
            waiting.set_result(True)

        as_ = AsyncSteps()
        as_.add(step, lambda as_, code: out.append(code))
        as_.add(lambda as_: out.append("next"))
        as_.promise()
        await waiting
        t = worker(as_.cancel)
        tid = await cancelled
        t.join()
        return tid, out

    tid, out = arun(main())
    assert tid == threading.get_ident()
    assert out == []


def test_asyncio_cancel_from_thread_settles_the_promise_and_lets_the_root_go(arun):
    # the promise stayed pending and the root stayed registered as running
    # (with its closures and state) when cancel() came from another thread
    import futoin_polyglot

    async def main():
        loop = asyncio.get_running_loop()
        waiting = loop.create_future()
        cancelled = []
        as_ = AsyncSteps()

        def step(as_):
            as_.set_cancel(lambda as_: cancelled.append(True))
            loop.call_soon(waiting.set_result, None)

        as_.add(step)
        fut = as_.promise()
        await waiting
        t = worker(as_.cancel)
        await asyncio.wait([fut])  # a hang fails on the suite's guard
        t.join()
        return fut.cancelled(), cancelled, id(as_) in futoin_polyglot._running

    assert arun(main()) == (True, [True], False)


def test_blocking_cancel_from_thread_ends_run_as_cancelled():
    import concurrent.futures
    import futoin_polyglot

    tool = Tool()
    cancelled = []
    threads = []
    as_ = AsyncSteps(tool)

    def step(as_):
        as_.set_cancel(lambda as_: cancelled.append(True))
        tool.ref()

        def work():
            try:
                root.cancel()
            finally:
                tool.unref()

        threads.append(worker(work))

    root = as_
    as_.add(step)
    with pytest.raises(concurrent.futures.CancelledError):
        as_.run()
    threads[0].join()
    assert cancelled == [True]
    assert id(as_) not in futoin_polyglot._running


def test_asyncio_many_threads(arun):
    async def main():
        threads = []

        def make(i):
            def step(as_):
                as_.wait_external()
                threads.append(worker(lambda: as_.success(i)))

            as_ = AsyncSteps()
            as_.add(step)
            as_.add(lambda as_, v: as_.success(v, as_.is_same_thread()))
            return as_.promise()

        results = await asyncio.gather(*[make(i) for i in range(32)])
        for t in threads:
            t.join()
        return results

    assert arun(main()) == [(i, True) for i in range(32)]


def test_handle_cancel_from_another_thread_drops_the_callback():
    # as the C++ reference's AsyncTool (internal_loop/immediate_cancel); it
    # was a RuntimeError
    tool = Tool(virtual_time=True)
    fired = []
    h = tool.deferred(10, lambda: fired.append("cancelled"))
    h2 = tool.immediate(lambda: fired.append("kept"))
    worker(h.cancel).join()
    assert not h.is_valid()
    del h  # its memory stays until the core is done with it
    tool.run()
    assert fired == ["kept"]
    assert not h2.is_valid()


def test_a_deferred_cancelled_from_another_thread_leaves_the_tool():
    # it stayed armed until its deadline (fired into nothing), so run() of a
    # real-time tool waited for it: here the virtual clock moved an hour on
    tool = Tool(virtual_time=True)
    fired = []
    h = tool.deferred(3_600_000, lambda: fired.append("cancelled"))
    worker(h.cancel).join()
    assert not h.is_valid()
    tool.run()
    assert tool.now() == 0
    assert tool.next_delay() == -1
    assert fired == []
    del h
    gc.collect()


def test_handles_cancelled_from_threads_while_the_loop_fires_them():
    # each callback runs at most once, none after its cancel() returned,
    # and every cancelled timer leaves the tool
    tool = Tool()
    ran = []
    handles = [tool.immediate(lambda i=i: ran.append(i)) for i in range(300)]
    hours = [tool.deferred(3_600_000, lambda: ran.append("hour")) for _ in range(300)]
    done = threading.Event()

    def cancel_all():
        for h in handles + hours:
            h.cancel()
        done.set()

    t = worker(cancel_all)
    while not done.is_set():
        tool.iterate()
    t.join()
    tool.iterate()
    assert "hour" not in ran
    assert len(ran) == len(set(ran))
    assert tool.next_delay() == -1
    del handles, hours
    gc.collect()


def test_tool_schedules_from_another_thread_as_the_cpp_reference():
    # internal_loop/immediate, defer, immediate_cancel of the C++ reference:
    # another thread schedules and cancels on the tool (it was a RuntimeError)
    tool = Tool(virtual_time=True)
    fired = []
    handles = {}

    def there():
        handles["imm"] = tool.immediate(lambda: fired.append("immediate"))
        handles["def"] = tool.deferred(5, lambda: fired.append("deferred"))
        gone = tool.immediate(lambda: fired.append("cancelled"))
        handles["gone_valid_before"] = gone.is_valid()
        gone.cancel()
        handles["gone_valid_after"] = gone.is_valid()

    worker(there).join()
    assert handles["gone_valid_before"] is True
    assert handles["gone_valid_after"] is False
    assert handles["imm"].is_valid() and handles["def"].is_valid()
    tool.run()
    assert fired == ["immediate", "deferred"]
    assert not handles["imm"].is_valid() and not handles["def"].is_valid()


def test_blocking_isync_lock_completed_by_another_thread():
    # the lock's step view, held by the thread, keeps run() waiting for it
    from futoin_polyglot import ISync

    timers = []

    class Remote(ISync):
        def lock(self, as_):
            as_.wait_external()
            t = threading.Timer(0.02, as_.success)
            timers.append(t)
            t.start()

    as_ = AsyncSteps(Tool())
    as_.sync(Remote(), lambda as_: as_.success("inside"))
    assert as_.run() == "inside"
    timers[0].join()


def test_blocking_run_that_gives_up_cancels_its_flow():
    # nothing can complete it: run() raises, and the flow does not stay
    # running (its cancel handlers run, the root takes a new run)
    cancelled = []
    as_ = AsyncSteps(Tool())
    as_.add(lambda as_: as_.set_cancel(lambda as_: cancelled.append(True)))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "InternalError" and "did not complete" in ei.value.info
    assert cancelled == [True]
    as_.add(lambda as_: as_.success(5))
    assert as_.run() == 5


# ---- an idle root moves to the thread that runs it ----


def _on_thread(fn):
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - the test reads it
            box["error"] = e

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def _made_here(log):
    as_ = AsyncSteps()
    as_.state.n = 41
    as_.add(lambda as_: log.append(threading.get_ident()))
    as_.add(lambda as_: as_.success(as_.state.n + 1))
    return as_


def test_a_root_made_on_this_thread_is_awaited_on_another_threads_loop():
    # as a coroutine made here and awaited in asyncio.run() on a worker thread
    log = []
    as_ = _made_here(log)
    state = as_.state

    async def main():
        return await as_

    assert _on_thread(lambda: asyncio.run(main())) == 42
    assert log and log[0] != threading.get_ident()
    assert as_.state is state
    # and back here, blocking, once that loop is gone: this thread's tool
    # frees the root left here meanwhile, and the state stays the flow's
    as_.add(lambda as_: as_.success(as_.state.n))
    assert as_.run() == 41
    assert as_.state is state and state.n == 41
    get_tool().iterate()
    assert state.n == 41


def test_a_root_made_on_this_thread_runs_blocking_on_another_thread():
    log = []
    as_ = _made_here(log)
    assert _on_thread(as_.run) == 42
    assert log and log[0] != threading.get_ident()


def test_a_root_made_on_a_thread_that_ended_runs_here():
    log = []
    as_ = _on_thread(lambda: _made_here(log))
    assert as_.run() == 42
    assert log == [threading.get_ident()]


def test_a_root_given_its_tool_stays_on_it_on_another_thread():
    tool = Tool()
    as_ = AsyncSteps(tool)
    as_.add(lambda as_: as_.success(1))

    async def main():
        return await as_

    with pytest.raises(RuntimeError, match="tool given"):
        _on_thread(lambda: asyncio.run(main()))
    assert as_._tool is tool


CALLS_FROM_ELSEWHERE = [
    ("add", lambda as_: as_.add(lambda as_: None)),
    ("parallel", lambda as_: as_.parallel()),
    ("loop", lambda as_: as_.loop(lambda as_: as_.break_loop())),
    ("repeat", lambda as_: as_.repeat(1, lambda as_, i: None)),
    ("set_timeout", lambda as_: as_.set_timeout(5)),
    ("set_cancel", lambda as_: as_.set_cancel(lambda as_: None)),
    ("wait_external", lambda as_: as_.wait_external()),
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS_FROM_ELSEWHERE], ids=[c[0] for c in CALLS_FROM_ELSEWHERE])
def test_a_step_is_built_on_its_loop_thread_only(call):
    # from another thread they raced the loop thread over the step (a
    # sub-step added while the callback ran replaced its wait_external());
    # only the completions (success(), error(), cancel()) may come from there
    got = {}

    def step(as_):
        as_.wait_external()
        done = threading.Event()

        def other():
            try:
                call(as_)
                got["call"] = "taken"
            except RuntimeError as e:
                got["call"] = str(e)
            as_.success("done")
            done.set()

        worker(other)
        done.wait()

    tool = Tool()
    tool.ref()
    try:
        result = AsyncSteps(tool).add(step).add(lambda as_, v: as_.success(v)).run()
    finally:
        tool.unref()
    assert "another thread" in got["call"]
    assert result == "done"


def test_a_tool_run_on_a_worker_and_scheduled_on_from_here_frees_cleanly(capfd):
    # its scheduling root, made on this thread, posted its free to the
    # worker's loop, long over: "1 of its roots ... not freed" and a leak
    tool = Tool()
    ran = []
    started = threading.Event()

    def loop():
        tool.ref()
        started.set()
        tool.run()

    t = worker(loop)
    assert started.wait(60)
    tool.immediate(lambda: (ran.append(1), tool.unref()))
    t.join(60)
    assert not t.is_alive()
    assert ran == [1]
    del tool
    gc.collect()
    assert capfd.readouterr().err == ""
