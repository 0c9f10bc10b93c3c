"""Blocking mode without asyncio: AsyncSteps.run(), futoin_polyglot.run(),
Tool.run()/iterate()/advance()/now() in virtual time."""

from __future__ import annotations

import os
import sys
import threading

import pytest

import futoin_polyglot as fp
from futoin_polyglot import AsyncSteps, FutoInError, Tool
from futoin_polyglot.testing import make_virtual_tool


def test_run_returns_result():
    as_ = AsyncSteps(Tool())
    as_.add(lambda as_: as_.add(lambda as_: as_.success("deep")))
    as_.add(lambda as_, v: as_.success(v, len(v)))
    assert as_.run() == ("deep", 4)


def test_run_raises_futoin_error():
    as_ = AsyncSteps(Tool())
    as_.add(lambda as_: as_.error("Blocked", "info"))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert (ei.value.code, ei.value.info) == ("Blocked", "info")


def test_module_run_drives_default_tool():
    result = []

    def worker():
        # a fresh thread has its own default tool, untouched by other tests
        as_ = AsyncSteps()
        assert as_._tool is fp.get_tool()
        as_.add(lambda as_: as_.success(1))
        as_.add(lambda as_, v: result.append(v + 1))
        as_.execute()
        assert result == []
        fp.run()
        result.append("after run")

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert result == [2, "after run"]


def test_module_run_with_explicit_tool(virtual_tool):
    out = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.set_timeout(2500), lambda as_, c: out.append((c, virtual_tool.now())))
    as_.execute(lambda as_, c: None)
    fp.run(virtual_tool)
    assert out == [("Timeout", 2500)]


def test_virtual_time_ten_second_timeout(virtual_tool):
    assert virtual_tool.virtual_time is True
    assert virtual_tool.now() == 0
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.set_timeout(10_000))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "Timeout"
    assert virtual_tool.now() == 10_000


def test_a_timer_stops_an_endless_loop_in_virtual_time(virtual_tool):
    # the C++ reference's "cancel the loop after 1000 ms": the virtual clock
    # stood while the loop kept the tool busy, so run() never returned
    n = [0]
    root = AsyncSteps(virtual_tool)
    root.loop(lambda as_: n.__setitem__(0, n[0] + 1))
    at = []
    virtual_tool.deferred(1000, lambda: (at.append(virtual_tool.now()), root.cancel()))
    root.execute()
    virtual_tool.run()
    assert at == [1000]
    assert n[0] > 10_000


def test_virtual_tool_fixture_and_factory():
    t = make_virtual_tool()
    assert isinstance(t, Tool) and t.virtual_time is True
    assert Tool().virtual_time is False


def test_timers_fire_in_deadline_order(virtual_tool):
    order = []
    for ms in (300, 100, 200, 100):
        as_ = AsyncSteps(virtual_tool)
        as_.add(lambda as_, ms=ms: as_.set_timeout(ms),
                lambda as_, c, ms=ms: (order.append((ms, virtual_tool.now())), as_.success()))
        as_.execute()
    virtual_tool.run()
    assert order == [(100, 100), (100, 100), (200, 200), (300, 300)]


def test_iterate_next_delay_and_advance(virtual_tool):
    out = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.set_timeout(300), lambda as_, c: (out.append(c), as_.success()))
    as_.execute()
    assert virtual_tool.iterate() == 300  # step ran; next deadline in 300 ms
    assert virtual_tool.next_delay() == 300
    assert out == []
    virtual_tool.advance(299)
    assert virtual_tool.now() == 299
    assert virtual_tool.next_delay() == 1
    assert out == []
    # with nothing else to do, iterate() jumps virtual time to the deadline;
    # the timeout's handler runs in that turn, what follows it in the next
    assert virtual_tool.iterate() == 0
    assert out == ["Timeout"]
    assert virtual_tool.now() == 300
    assert virtual_tool.iterate() < 0  # nothing left afterwards


def test_tool_ref_keeps_run_alive_until_unref():
    tool = Tool()
    started = threading.Event()
    out = []
    tool.ref()

    def unref_later():
        started.wait()
        out.append("unref")
        tool.unref()

    t = threading.Thread(target=unref_later)
    t.start()
    flow = AsyncSteps(tool)
    flow.add(lambda as_: (out.append("step"), started.set()))
    flow.execute()
    tool.run()  # returns only once the other thread dropped its reference
    out.append("run returned")
    t.join()
    assert out == ["step", "unref", "run returned"]


def test_run_again_after_completion(virtual_tool):
    first = AsyncSteps(virtual_tool)
    first.success_step("one")
    assert first.run() == "one"
    second = AsyncSteps(virtual_tool)
    second.success_step("two")
    assert second.run() == "two"


def test_tool_address_and_burst():
    t = Tool(burst=4)
    assert isinstance(t.address(), int) and t.address() != 0
    n = [0]

    def body(as_):
        n[0] += 1
        if n[0] == 50:
            as_.break_loop()

    as_ = AsyncSteps(t)
    as_.loop(body)
    as_.run()
    assert n[0] == 50


def _parallel_order(tool):
    out = []
    as_ = AsyncSteps(tool)
    p = as_.parallel()
    for n in (1, 2, 3):
        def branch(as_, n=n):
            out.append(n)
            as_.add(lambda as_: out.append(n * 10 + 1))
            as_.add(lambda as_: out.append(n * 10 + 2))
        p.add(branch)
    as_.run()
    return out


def test_tool_burst_sets_how_many_steps_a_flow_or_branch_runs_in_a_row():
    t = Tool()
    assert t.burst == 100  # the default, as the JS reference's bursts
    assert _parallel_order(t) == [1, 11, 12, 2, 21, 22, 3, 31, 32]
    t.burst = 1  # one step per turn: the C++ reference's interleaving
    assert t.burst == 1
    assert _parallel_order(t) == [1, 2, 3, 11, 21, 31, 12, 22, 32]
    assert Tool(burst=7).burst == 7
    for bad, exc in ((0, ValueError), (-1, ValueError), (2**32, ValueError), ("1", TypeError), (None, TypeError)):
        with pytest.raises(exc):
            t.burst = bad
    with pytest.raises(TypeError):
        del t.burst
    assert t.burst == 1


# ---- spec 2.6: the AsyncTool interface of a Tool ----


def test_tool_immediate_and_deferred_run_in_order_in_virtual_time(virtual_tool):
    out = []
    h1 = virtual_tool.deferred(20, lambda: out.append(("d20", virtual_tool.now())))
    h2 = virtual_tool.deferred(10, lambda: out.append(("d10", virtual_tool.now())))
    h3 = virtual_tool.immediate(lambda: out.append(("i", virtual_tool.now())))
    assert h1.is_valid() and bool(h2) and virtual_tool.is_valid(h3)
    assert isinstance(h1, fp.Handle) and "Handle" in fp.__all__
    virtual_tool.run()
    assert out == [("i", 0), ("d10", 10), ("d20", 20)]
    assert not h1.is_valid() and not h2 and not virtual_tool.is_valid(h3)


def test_tool_cancel_drops_a_callback_and_is_harmless_after_it_ran(virtual_tool):
    out = []
    keep = virtual_tool.deferred(5, lambda: out.append("kept"))
    gone = virtual_tool.deferred(5, lambda: out.append("gone"))
    now = virtual_tool.immediate(lambda: out.append("now"))
    gone.cancel()
    virtual_tool.cancel(now)
    assert not gone.is_valid() and not now.is_valid() and keep.is_valid()
    virtual_tool.run()
    assert out == ["kept"]
    keep.cancel()  # it ran: nothing to do
    virtual_tool.cancel(keep)
    gone.cancel()


def test_tool_callbacks_outlive_their_handles_and_can_schedule_more(virtual_tool):
    out = []

    def first():
        out.append("first")
        virtual_tool.deferred(1, lambda: out.append("second"))

    virtual_tool.immediate(first)  # handle dropped at once
    virtual_tool.run()
    assert out == ["first", "second"]


def test_tool_callback_exception_is_reported_not_raised(virtual_tool, monkeypatch):
    out = []
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(str(u.exc_value)))

    def boom():
        raise ValueError("in callback")

    virtual_tool.immediate(boom)
    virtual_tool.immediate(lambda: out.append("next"))
    virtual_tool.run()
    assert out == ["next"]
    assert reported == ["in callback"]


def test_tool_scheduling_checks_its_arguments(virtual_tool):
    with pytest.raises(TypeError):
        virtual_tool.immediate(None)
    with pytest.raises(TypeError):
        virtual_tool.deferred(5, 7)
    with pytest.raises((TypeError, ValueError, OverflowError)):
        virtual_tool.deferred(-1, lambda: None)
    with pytest.raises(TypeError):
        virtual_tool.cancel("not a handle")
    assert virtual_tool.is_same_thread() is True
    seen = {}

    def other():
        seen["same"] = virtual_tool.is_same_thread()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen["same"] is False


def test_tool_with_pending_callbacks_is_freed_cleanly():
    tool = make_virtual_tool()
    out = []
    tool.deferred(100, lambda: out.append("never"))
    h = tool.immediate(lambda: out.append("never either"))
    del tool
    h.cancel()  # the handle keeps its tool: cancelling still works
    assert out == []


def test_a_callback_that_drops_its_own_handle_frees_it_once():
    # PYTHONMALLOC=debug turns a use after free into a crash
    import subprocess
    code = """
from futoin_polyglot.testing import make_virtual_tool
tool = make_virtual_tool()
box = {}
def fire():
    box.pop("h")  # the last reference to its own handle
    box["ran"] = True
box["h"] = tool.deferred(1, fire)
tool.run()
print(box)
"""
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONMALLOC="debug"),
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout.strip()) == (0, "{'ran': True}"), r.stderr


def test_run_inside_a_step_is_a_runtime_error_not_a_hang(virtual_tool):
    seen = []

    def outer(as_):
        try:
            AsyncSteps(virtual_tool).add(lambda a: a.success("inner")).run()
        except RuntimeError as e:
            seen.append(str(e))
        as_.success("outer")

    assert AsyncSteps(virtual_tool).add(outer).run() == "outer"
    assert len(seen) == 1 and "running" in seen[0]


def test_system_exit_and_keyboard_interrupt_in_a_step_propagate(virtual_tool):
    """BaseExceptions that are no Exception stop the program, as in plain
    Python: they leave run() instead of becoming the flow's error"""
    def leave(as_):
        sys.exit(3)

    with pytest.raises(SystemExit) as ei:
        AsyncSteps(virtual_tool).add(leave).run()
    assert ei.value.code == 3
    # the tool is usable again
    assert AsyncSteps(virtual_tool).add(lambda as_: as_.success("again")).run() == "again"

    def interrupt(as_):
        raise KeyboardInterrupt

    code = """
import asyncio
from futoin_polyglot import AsyncSteps
def interrupt(as_):
    raise KeyboardInterrupt
async def main():
    await AsyncSteps().add(interrupt)
try:
    asyncio.run(main())
except KeyboardInterrupt:
    print("KeyboardInterrupt left asyncio.run")
"""
    import subprocess
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "KeyboardInterrupt left asyncio.run", r.stderr


def test_keyboard_interrupt_outside_steps_leaves_run(virtual_tool, monkeypatch):
    """in a cancel handler, a tool callback or a cleanup it was printed as
    unraisable and run() went on (Ctrl-C swallowed)"""
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u))

    def interrupt(*args):
        raise KeyboardInterrupt

    def guarded(as_):
        as_.set_cancel(interrupt)
        as_.set_timeout(10)

    flow = AsyncSteps(virtual_tool).add(guarded, lambda as_, code: as_.success("handled " + code))
    with pytest.raises(KeyboardInterrupt):
        flow.run()
    virtual_tool.deferred(5, interrupt)
    with pytest.raises(KeyboardInterrupt):
        virtual_tool.run()
    assert reported == []
    assert AsyncSteps(virtual_tool).add(lambda as_: as_.success("again")).run() == "again"


def test_keyboard_interrupt_in_a_cancel_handler_leaves_cancel(virtual_tool, monkeypatch):
    """root.cancel() outside the loop kept it for the next, unrelated run()"""
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_type))

    def interrupt(as_):
        raise KeyboardInterrupt("x")

    def waits(as_):
        as_.wait_external()
        as_.set_cancel(interrupt)

    root = AsyncSteps(virtual_tool).add(waits)
    root.execute()
    virtual_tool.iterate()
    with pytest.raises(KeyboardInterrupt):
        root.cancel()
    assert AsyncSteps(virtual_tool).add(lambda as_: as_.success(42)).run() == 42
    # from a destructor it is reported, as Python reports one raised in __del__
    root2 = AsyncSteps(virtual_tool)
    root2.stack(8, lambda buf: sys.exit(3))
    del root2
    import gc
    gc.collect()
    assert reported == [SystemExit]
    assert AsyncSteps(virtual_tool).add(lambda as_: as_.success(43)).run() == 43


def test_unref_without_ref_is_a_runtime_error():
    tool = Tool(virtual_time=True)
    with pytest.raises(RuntimeError, match="without a ref"):
        tool.unref()
    tool.ref()
    tool.unref()
    with pytest.raises(RuntimeError):
        tool.unref()
    # ref() still works afterwards: a waiting flow keeps run() alive until
    # unref(), and a completion from outside lets it finish
    box = {}
    tool.ref()
    root = AsyncSteps(tool)
    root.add(lambda as_: (as_.wait_external(), box.__setitem__("as", as_)))
    root.add(lambda as_: tool.unref())
    root.execute()
    tool.iterate(0)
    assert tool.next_delay() != 0  # held: nothing ready, but not done
    box["as"].success()
    tool.run()


def test_run_of_a_root_cancelled_through_the_binary_interface(virtual_tool):
    import concurrent.futures

    import futoin_polyglot

    root = AsyncSteps(virtual_tool)

    def step(as_):
        as_.wait_external()
        virtual_tool.deferred(5, lambda: futoin_polyglot.wrap(root.binary()).cancel())

    root.add(step)
    with pytest.raises(concurrent.futures.CancelledError):
        root.run()


def test_run_waits_for_another_python_thread_to_complete_the_step(virtual_tool, monkeypatch):
    # README: as_() works from any thread under run(); without tool.ref() the
    # run() used to give up ("did not complete") once its thread had nothing to do
    import futoin_polyglot as fp

    idle = threading.Event()
    real = fp._other_threads

    def others():
        idle.set()  # the completing thread goes on only once run() is idle
        return real()

    monkeypatch.setattr(fp, "_other_threads", others)

    def step(as_):
        as_.wait_external()

        def later():
            idle.wait()
            as_.success("from t2")

        threading.Thread(target=later).start()

    assert AsyncSteps(virtual_tool).add(step).run() == "from t2"


def test_run_returns_when_its_flow_ends_while_a_ref_is_held(virtual_tool):
    # it waited for the whole tool to be idle: forever while the ref was held
    virtual_tool.ref()
    try:
        assert AsyncSteps(virtual_tool).add(lambda as_: as_.success("done")).run() == "done"
    finally:
        virtual_tool.unref()


def test_run_of_a_flow_nothing_can_complete_still_fails(virtual_tool):
    with pytest.raises(FutoInError, match="did not complete"):
        AsyncSteps(virtual_tool).add(lambda as_: as_.wait_external()).run()


def test_run_of_an_abandoned_flow_fails_while_an_unrelated_thread_runs(virtual_tool):
    # no view of its waiting step is held: nothing can complete it, so an
    # unrelated thread (a pool worker, a listener) must not make run() wait
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    try:
        with pytest.raises(FutoInError, match="did not complete"):
            AsyncSteps(virtual_tool).add(lambda as_: as_.wait_external()).run()
    finally:
        stop.set()
        t.join()
