"""Misuse: bad arguments raise TypeError/ValueError at the call, engine misuse
inside steps becomes InternalError in the flow; never a crash."""

from __future__ import annotations

import asyncio
import sys

import pytest

import futoin_polyglot
from futoin_polyglot import (
    AsyncSteps, CStep, FutoInError, ISync, Limiter, Mutex, Throttle, Tool, errors, is_native, wrap,
)


def noop(as_, *args):
    pass


BAD_CALLS = [
    ("add(None)", lambda a: a.add(None), TypeError),
    ("add(123)", lambda a: a.add(123), TypeError),
    ("add('str')", lambda a: a.add("step"), TypeError),
    ("add() no func", lambda a: a.add(), TypeError),
    ("add(f, 5)", lambda a: a.add(noop, 5), TypeError),
    ("add(f, None, None)", lambda a: a.add(noop, None, None), TypeError),
    ("add(f, bogus=1)", lambda a: a.add(noop, bogus=1), TypeError),
    ("parallel(5)", lambda a: a.parallel(5), TypeError),
    ("repeat(-1, f)", lambda a: a.repeat(-1, noop), ValueError),
    ("repeat(2**63, f)", lambda a: a.repeat(2**63, noop), ValueError),  # was OverflowError
    ("stack(2**63)", lambda a: a.stack(2**63), ValueError),  # was OverflowError
    ("repeat('x', f)", lambda a: a.repeat("x", noop), TypeError),
    ("repeat(1.5, f)", lambda a: a.repeat(1.5, noop), TypeError),
    ("repeat(2, None)", lambda a: a.repeat(2, None), TypeError),
    ("repeat(2, f, 5)", lambda a: a.repeat(2, noop, 5), TypeError),
    ("loop(5)", lambda a: a.loop(5), TypeError),
    ("loop(f, 5)", lambda a: a.loop(noop, 5), TypeError),
    ("loop(f, b'L')", lambda a: a.loop(noop, b"L"), TypeError),
    ("for_each([], None)", lambda a: a.for_each([1], None), TypeError),
    ("for_each([], f, 5)", lambda a: a.for_each([1], noop, 5), TypeError),
    ("for_each(5, f)", lambda a: a.for_each(5, noop), TypeError),
    ("set_timeout(-5)", lambda a: a.set_timeout(-5), (TypeError, ValueError)),
    ("set_timeout('x')", lambda a: a.set_timeout("x"), (TypeError, ValueError)),
    ("set_timeout(1.5)", lambda a: a.set_timeout(1.5), (TypeError, ValueError)),
    ("set_timeout(None)", lambda a: a.set_timeout(None), (TypeError, ValueError)),
    ("set_timeout(2**40)", lambda a: a.set_timeout(2**40), (TypeError, ValueError)),
    ("set_timeout(2**70)", lambda a: a.set_timeout(2**70), (TypeError, ValueError)),
    ("set_cancel(5)", lambda a: a.set_cancel(5), TypeError),
    ("error(123)", lambda a: a.error(123), TypeError),
    ("error(None)", lambda a: a.error(None), TypeError),
    ("error('X', 5)", lambda a: a.error("X", 5), TypeError),
    ("break_loop(5)", lambda a: a.break_loop(5), TypeError),
    ("continue_loop(5)", lambda a: a.continue_loop(5), TypeError),
    ("await_(5)", lambda a: a.await_(5), TypeError),
    ("await_(None)", lambda a: a.await_(None), TypeError),
    ("await_(lambda)", lambda a: a.await_(lambda: 1), TypeError),
    ("sync(object(), f)", lambda a: a.sync(object(), noop), TypeError),
    ("sync(Mutex, None)", lambda a: a.sync(Mutex(tool=a._tool), None), TypeError),
    ("sync(Mutex, f, 5)", lambda a: a.sync(Mutex(tool=a._tool), noop, 5), TypeError),
    ("execute(5)", lambda a: a.execute(5), TypeError),
    ("copy_from(5)", lambda a: a.copy_from(5), TypeError),
    ("copy_from(None)", lambda a: a.copy_from(None), TypeError),
    # an AsyncSteps is callable (its success()) but no step or handler
    ("add(AsyncSteps)", lambda a: a.add(AsyncSteps(a._tool)), TypeError),
    ("add(f, AsyncSteps)", lambda a: a.add(noop, AsyncSteps(a._tool)), TypeError),
    ("loop(AsyncSteps)", lambda a: a.loop(AsyncSteps(a._tool)), TypeError),
    ("repeat(1, AsyncSteps)", lambda a: a.repeat(1, AsyncSteps(a._tool)), TypeError),
    ("for_each([1], AsyncSteps)", lambda a: a.for_each([1], AsyncSteps(a._tool)), TypeError),
    ("set_cancel(AsyncSteps)", lambda a: a.set_cancel(AsyncSteps(a._tool)), TypeError),
    ("sync(Mutex, AsyncSteps)", lambda a: a.sync(Mutex(tool=a._tool), AsyncSteps(a._tool)), TypeError),
    ("execute(AsyncSteps)", lambda a: a.execute(AsyncSteps(a._tool)), TypeError),
]


@pytest.mark.parametrize("name, call, exc", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_arguments_on_root(virtual_tool, name, call, exc):
    as_ = AsyncSteps(virtual_tool)
    with pytest.raises(exc):
        call(as_)
    # the failed call recorded nothing: the root still runs cleanly
    as_.success_step("still fine")
    assert as_.run() == "still fine"


@pytest.mark.parametrize("name, call, exc", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_arguments_inside_step(virtual_tool, name, call, exc):
    seen = {}

    def step(as_):
        try:
            call(as_)
        except BaseException as e:  # noqa: BLE001 - recorded and checked below
            seen["exc"] = e
        as_.success("continued")

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    assert as_.run() == "continued"
    assert isinstance(seen.get("exc"), exc)


BAD_CONSTRUCTORS = [
    ("Mutex(max=-1)", lambda: Mutex(max=-1), ValueError),
    ("Mutex(max='x')", lambda: Mutex(max="x"), TypeError),
    ("Mutex(max=True)", lambda: Mutex(max=True), TypeError),
    ("Mutex(max=1.0)", lambda: Mutex(max=1.0), TypeError),
    ("Mutex(max=2**32)", lambda: Mutex(max=2**32), ValueError),
    ("Mutex(max_queue=-1)", lambda: Mutex(max_queue=-1), ValueError),
    ("Mutex(max_queue='x')", lambda: Mutex(max_queue="x"), TypeError),
    ("Throttle('x')", lambda: Throttle("x"), TypeError),
    ("Throttle(1, -1)", lambda: Throttle(1, -1), ValueError),
    ("Throttle(1, max_queue=-2)", lambda: Throttle(1, max_queue=-2), ValueError),
    ("Limiter(concurrent='x')", lambda: Limiter(concurrent="x"), TypeError),
    ("Limiter(rate=-1)", lambda: Limiter(rate=-1), ValueError),
    ("Limiter(burst=None)", lambda: Limiter(burst=None), TypeError),
    ("AsyncSteps(5)", lambda: AsyncSteps(5), TypeError),
    ("CStep(0)", lambda: CStep(0), ValueError),
    ("CStep('x')", lambda: CStep("x"), TypeError),
    ("wrap(0)", lambda: wrap(0), ValueError),
    ("wrap('x')", lambda: wrap("x"), TypeError),
    # addresses that can be no object (the first 64 KiB are never mapped, a
    # FutoInAsyncSteps is pointer-aligned) were dereferenced: a crash
    ("wrap(12345)", lambda: wrap(12345), ValueError),
    ("wrap(-8)", lambda: wrap(-8), (ValueError, OverflowError)),
    ("wrap(0x100001)", lambda: wrap(0x100001), ValueError),
    ("is_native(12345)", lambda: is_native(12345), ValueError),
    ("is_native(0x100001)", lambda: is_native(0x100001), ValueError),
    ("is_native('x')", lambda: is_native("x"), TypeError),
    # a capsule of this package that holds no FutoInAsyncSteps was taken as one
    # a label that is no UTF-8 (a lone surrogate) left SystemError
    ("loop(f, '\\ud800')", lambda: AsyncSteps(Tool()).loop(noop, "\ud800"), ValueError),
    ("repeat(1, f, '\\ud800')", lambda: AsyncSteps(Tool()).repeat(1, noop, "\ud800"), ValueError),
    ("for_each([1], f, '\\ud800')", lambda: AsyncSteps(Tool()).for_each([1], noop, "\ud800"), ValueError),
    ("wrap(Mutex()._sync)", lambda: wrap(Mutex(tool=Tool())._sync), TypeError),
    ("wrap(p, tool=5)", lambda: wrap(AsyncSteps(Tool()).binary(), tool=5), TypeError),
    ("Tool().advance(5)", lambda: Tool().advance(5), RuntimeError),
    # wrapped around (the unsigned formats take -1 as 2^32-1; the clock wrapped)
    ("Tool(burst=-1)", lambda: Tool(burst=-1), ValueError),
    ("Tool(burst=2**32)", lambda: Tool(burst=2**32), ValueError),
    ("Tool().iterate(-1)", lambda: Tool().iterate(-1), ValueError),
    ("advance(2**64-10)", lambda: Tool(virtual_time=True).advance(2**64 - 10), ValueError),
    ("Tool(virtual_time=True).advance(-1)", lambda: Tool(virtual_time=True).advance(-1),
     (OverflowError, ValueError, TypeError)),
]


@pytest.mark.parametrize("name, call, exc", BAD_CONSTRUCTORS, ids=[c[0] for c in BAD_CONSTRUCTORS])
def test_bad_constructor_arguments(name, call, exc):
    with pytest.raises(exc):
        call()


def test_cstep_is_not_callable():
    step = CStep(1234)
    with pytest.raises(TypeError):
        step(None)


def test_cstep_with_a_c_error_handler_refuses_a_python_one_too(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    with pytest.raises(TypeError):
        as_.add(CStep(1234, onerror=CStep(5678)), lambda as_, code: None)
    with pytest.raises(TypeError):
        as_.add(CStep(1234), CStep(5678))
    as_.success_step(1)
    assert as_.run() == 1


def test_isync_base_lock_not_implemented(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.sync(ISync(), lambda as_: as_.success("entered"))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "NotImplementedError"


# ---- engine misuse inside steps -> InternalError ----


def internal_error_of(virtual_tool, step):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(step, lambda as_, code: seen.append((code, as_.state.error_info)))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == errors.InternalError
    assert seen and seen[0][0] == "InternalError"
    return seen[0][1]


def test_success_twice(virtual_tool):
    def step(as_):
        as_.success(1)
        as_.success(2)

    assert "twice" in internal_error_of(virtual_tool, step)


def test_success_after_add(virtual_tool):
    def step(as_):
        as_.add(noop)
        as_.success(1)

    assert internal_error_of(virtual_tool, step) == "Invalid success() call"


def test_add_after_success(virtual_tool):
    def step(as_):
        as_.success(1)
        as_.add(noop)

    assert "success" in internal_error_of(virtual_tool, step)


@pytest.mark.parametrize("call", [
    lambda as_: as_.set_timeout(10),
    lambda as_: as_.set_cancel(noop),
    lambda as_: as_.wait_external(),
], ids=["set_timeout", "set_cancel", "wait_external"])
def test_wait_calls_after_success(virtual_tool, call):
    # as add() after success(): the step completed, nothing can wait on it
    # (they were taken silently: no timer, no cancel handler)
    def step(as_):
        as_.success(1)
        call(as_)

    assert "after success()" in internal_error_of(virtual_tool, step)


def test_error_after_success(virtual_tool):
    def step(as_):
        as_.success(1)
        as_.error("Late")

    internal_error_of(virtual_tool, step)


@pytest.mark.parametrize("call", [
    lambda outer: outer.add(noop),
    lambda outer: outer.success(1),
    lambda outer: outer.set_timeout(5),
    lambda outer: outer.wait_external(),
    lambda outer: outer.set_cancel(noop),
    lambda outer: outer.parallel(),
], ids=["add", "success", "set_timeout", "wait_external", "set_cancel", "parallel"])
def test_call_on_the_outer_step_fails_the_running_sub_step(virtual_tool, call):
    # as the JS reference's sanity check: not ignored with a line on stderr
    def step(outer):
        outer.add(lambda inner: call(outer))

    assert "outer step" in internal_error_of(virtual_tool, step)


def test_execute_on_a_step(virtual_tool):
    def step(as_):
        as_.execute()

    assert "root" in internal_error_of(virtual_tool, step)


def test_execute_twice_while_running(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.set_timeout(100), lambda as_, c: as_.success())
    as_.execute(lambda as_, code: seen.append(("first", code)))
    as_.execute(lambda as_, code: seen.append(("second", code)))
    virtual_tool.run()
    assert ("second", "InternalError") in seen
    assert ("first", "InternalError") not in seen


def test_stale_step_view_raises_not_crashes(virtual_tool):
    box = {}

    def keep(as_):
        box["view"] = as_

    def use(as_):
        old = box["view"]
        for call in (lambda: old.add(noop), lambda: old.set_timeout(5), lambda: old.set_cancel(noop),
                     lambda: old.loop(noop), lambda: old.repeat(1, noop)):
            try:
                call()
                box.setdefault("no_error", []).append(call)
            except RuntimeError:
                box["runtime_errors"] = box.get("runtime_errors", 0) + 1
        as_.success(bool(old))

    as_ = AsyncSteps(virtual_tool)
    as_.add(keep)
    as_.add(use)
    assert as_.run() is False
    assert box.get("runtime_errors", 0) >= 1


def test_a_kept_step_view_never_acts_on_the_step_that_reused_its_memory(virtual_tool):
    # the engine reuses an ended step's memory for the next step; a view kept
    # past its step's end completed that other step (late success after a
    # timeout, spec 3.5, without a cancel handler)
    box = {"got": []}

    def keep(as_):
        box["view"] = as_

    def waits(as_):
        as_.wait_external()
        for name, call in (("success", lambda: box["view"].success("stale")),
                           ("error", lambda: box["view"].error("Stale")),
                           ("set_timeout", lambda: box["view"].set_timeout(1)),
                           ("wait_external", lambda: box["view"].wait_external())):
            with pytest.raises(RuntimeError, match="ended"):
                call()
            box["got"].append(name)
        assert not box["view"]
        assert as_
        virtual_tool.deferred(5, lambda: as_.success("real"))

    as_ = AsyncSteps(virtual_tool)
    as_.add(keep)
    as_.add(lambda as_: as_.add(waits))
    as_.add(lambda as_, v: as_.success(v))
    assert as_.run() == "real"
    assert box["got"] == ["success", "error", "set_timeout", "wait_external"]


def test_late_success_after_a_timeout_is_refused(virtual_tool):
    box = {}

    def times_out(as_):
        as_.set_timeout(10)
        box["view"] = as_

    def recover(as_, code):
        box["code"] = code
        as_.success("recovered")

    def late():
        with pytest.raises(RuntimeError, match="ended"):
            box["view"].success("late")
        box["late"] = True

    def next_waits(as_, v):
        as_.wait_external()
        virtual_tool.deferred(20, late)
        virtual_tool.deferred(30, lambda: as_.success(v))

    as_ = AsyncSteps(virtual_tool)
    as_.add(times_out, recover)
    as_.add(next_waits)
    assert as_.run() == "recovered"
    assert box["code"] == "Timeout" and box["late"]


def test_freed_root_raises(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_._free()
    assert not as_
    with pytest.raises(RuntimeError):
        as_.add(noop)
    with pytest.raises(RuntimeError):
        as_.state
    with pytest.raises(RuntimeError):
        as_.binary()


@pytest.fixture
def fresh_asyncio_policy():
    """No asyncio loop has ever been set in this thread (as in a program that
    never used asyncio), whatever earlier tests did."""
    old = asyncio.get_event_loop_policy()
    policy = asyncio.DefaultEventLoopPolicy()
    asyncio.set_event_loop_policy(policy)
    try:
        yield policy
    finally:
        loop = getattr(policy._local, "_loop", None)
        if loop is not None:
            loop.close()
        asyncio.set_event_loop_policy(old)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_await_outside_asyncio_fails_in_flow(virtual_tool, fresh_asyncio_policy):
    """await_() on a flow that no asyncio loop drives cannot work; the flow
    must fail with an error instead of waiting forever (and run() must not
    report it as a success)."""

    async def coro():
        return 1

    c = coro()
    as_ = AsyncSteps(virtual_tool)
    as_.await_(c)
    try:
        with pytest.raises(FutoInError):
            as_.run()
    finally:
        c.close()


def test_run_of_flow_left_waiting_is_not_a_success(virtual_tool):
    """A flow that waits for an external event nobody will deliver (no
    ref() held) leaves run() when the tool is idle; the flow did not
    complete, so run() must not return as if it succeeded without values."""
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.wait_external())
    as_.add(lambda as_: as_.success("never"))
    with pytest.raises(Exception):
        as_.run()


def test_error_in_cancel_handler_does_not_break_flow(virtual_tool, monkeypatch):
    out = []
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def step(as_):
        def bad_cancel(as_):
            out.append("cancel ran")
            raise ValueError("cancel handler failure")

        as_.set_cancel(bad_cancel)
        as_.set_timeout(10)

    as_ = AsyncSteps(virtual_tool)
    as_.add(step, lambda as_, code: as_.success(code))
    assert as_.run() == "Timeout"
    assert out == ["cancel ran"]
    assert [str(u.exc_value) for u in unraisable] == ["cancel handler failure"]


def test_exception_in_unhandled_error_callback_is_contained(virtual_tool, monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def cb(as_, code):
        raise ValueError("in unhandled callback")

    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("X"))
    as_.execute(cb)
    virtual_tool.run()
    assert [str(u.exc_value) for u in unraisable] == ["in unhandled callback"]
    after = AsyncSteps(virtual_tool)
    after.success_step("tool still works")
    assert after.run() == "tool still works"


def test_step_handle_of_a_non_callable_raises_only_type_error(monkeypatch):
    from futoin_polyglot import StepHandle

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u))
    with pytest.raises(TypeError):
        StepHandle(5)
    import gc
    gc.collect()
    assert reported == []  # __del__ found no _owner: "Exception ignored" was printed


# ---- found by fuzzing ----


def test_view_of_unhandled_error_handler_ends_with_it(virtual_tool):
    import gc

    kept = []
    r = AsyncSteps(virtual_tool)
    r.add(lambda as_: as_.error("X"))
    r.execute(lambda as_, code: kept.append(as_))
    virtual_tool.run()
    del r
    gc.collect()
    other = AsyncSteps(virtual_tool)  # may reuse the memory of the root above
    with pytest.raises(RuntimeError):
        kept[0].add(noop)
    with pytest.raises(RuntimeError):
        kept[0].state
    other.add(lambda as_: as_.success("other"))
    assert other.run() == "other"


def test_copy_from_itself_copies_its_steps_once(virtual_tool):
    seen = []
    r = AsyncSteps(virtual_tool)
    r.add(lambda as_: seen.append(1))
    assert r.copy_from(r) is r  # looped for ever, growing
    r.run()
    assert seen == [1, 1]


def test_execute_of_a_step_is_only_the_engine_error(virtual_tool):
    import futoin_polyglot as fp

    codes = []
    before = len(fp._running)
    for _ in range(20):
        r = AsyncSteps(virtual_tool)
        r.add(lambda as_: as_.execute(), lambda as_, code: (codes.append(code), as_.success()))
        r.run()
    assert codes == [errors.InternalError] * 20
    assert len(fp._running) == before  # each step view was kept there for good


def test_run_and_promise_of_a_step_or_branch_raise(virtual_tool, arun):
    with pytest.raises(TypeError, match="root"):
        AsyncSteps(virtual_tool).parallel().run()
    seen = []

    def step(as_):
        with pytest.raises(TypeError, match="root"):
            as_.run()
        with pytest.raises(TypeError, match="root"):
            as_.promise()
        seen.append("checked")

    AsyncSteps(virtual_tool).add(step).run()
    assert seen == ["checked"]


def test_repr_of_an_ended_view(virtual_tool):
    kept = []
    AsyncSteps(virtual_tool).add(lambda as_: kept.append(as_)).run()
    assert "ended" in repr(kept[0])
    assert str(kept[0]) == repr(kept[0])


@pytest.mark.parametrize("call", [
    lambda as_: as_.error("bad\x00code"),
    lambda as_: as_.error("bad\ud800code"),
    lambda as_: as_.error("Code", "info \ud800"),
    lambda as_: as_.error("Code", "info \x00 cut"),
    lambda as_: as_.break_loop("label\ud800"),
    lambda as_: as_.continue_loop("label\x00"),
], ids=["code NUL", "code surrogate", "info surrogate", "info NUL", "break label", "continue label"])
def test_text_c_cannot_take_is_a_value_error_at_the_call(virtual_tool, call):
    kept = []
    root = AsyncSteps(virtual_tool)
    root.add(lambda as_: (kept.append(as_), as_.wait_external()))
    root.execute()
    virtual_tool.iterate()
    with pytest.raises(ValueError, match="C"):
        call(kept[0])  # from outside: the flow is not disturbed
    kept[0].success()
    virtual_tool.run()
    codes = []
    r = AsyncSteps(virtual_tool)
    r.loop(lambda as_: call(as_), "label")
    r.execute(lambda as_, code: codes.append((code, as_.state.error_info)))
    virtual_tool.run()
    assert codes and codes[0][0] == "ValueError" and "C" in codes[0][1]


def test_futoin_error_with_a_code_not_a_str_says_so(virtual_tool):
    got = []
    r = AsyncSteps(virtual_tool)

    def step(as_):
        raise FutoInError(123, 456)

    r.add(step, lambda as_, code: got.append((code, as_.state.error_info)))
    r.execute()
    virtual_tool.run()
    assert got[0][0] == errors.InternalError
    assert "code" in got[0][1] and "int" in got[0][1]


def test_step_handle_tool_must_be_a_tool():
    from futoin_polyglot import StepHandle

    with pytest.raises(TypeError, match="Tool"):
        StepHandle(noop, tool=5)


def test_address_of_unmapped_memory_is_a_value_error():
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    addr = libc.mmap(None, mmap.PAGESIZE, mmap.PROT_READ, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert addr not in (None, ctypes.c_void_p(-1).value)
    assert libc.munmap(addr, mmap.PAGESIZE) == 0
    with pytest.raises(ValueError, match="readable"):
        is_native(addr)  # crashed the interpreter
    with pytest.raises(ValueError, match="readable"):
        wrap(addr)


def test_cstep_never_initialised_is_refused_at_add(virtual_tool):
    with pytest.raises(TypeError, match="__init__"):
        AsyncSteps(virtual_tool).add(CStep.__new__(CStep))


@pytest.mark.parametrize("call", [
    lambda r: r.success(1),
    lambda r: r(),
    lambda r: r.set_timeout(5),
    lambda r: r.set_cancel(noop),
    lambda r: r.wait_external(),
    lambda r: r.break_loop(),
    lambda r: r.continue_loop(),
], ids=["success", "call", "set_timeout", "set_cancel", "wait_external", "break_loop", "continue_loop"])
def test_step_calls_on_a_root_raise(virtual_tool, call):
    # they printed "futoin: InternalError: ... (ignored)" and returned None
    r = AsyncSteps(virtual_tool)
    with pytest.raises(RuntimeError, match="not a root"):
        call(r)
    r.add(lambda as_: as_.success("fine"))
    assert r.run() == "fine"


def test_wrap_of_readable_memory_that_is_no_steps_is_a_value_error():
    import ctypes

    with pytest.raises(ValueError):
        wrap(id([1, 2, 3]))  # its first word is a reference count: crashed on the "api" it read there
    table = ctypes.create_string_buffer(512)  # an API table of NULLs
    fake = (ctypes.c_void_p * 4)(ctypes.addressof(table))
    with pytest.raises(ValueError):
        wrap(ctypes.addressof(fake))
    assert is_native(ctypes.addressof(fake)) is False


@pytest.mark.parametrize("call", [
    lambda r: r.add(noop),
    lambda r: r.parallel(),
    lambda r: r.loop(noop),
    lambda r: r.repeat(2, noop),
    lambda r: r.success_step(1),
], ids=["add", "parallel", "loop", "repeat", "success_step"])
def test_root_level_call_on_a_running_root_is_an_internal_error(virtual_tool, call):
    # as the JS reference: "Top level add in execution"; the step is not
    # appended after the end of the flow (where promise() lost its error)
    root = AsyncSteps(virtual_tool)
    root.add(lambda as_: call(root))
    root.add(lambda as_: as_.success("res"))
    with pytest.raises(FutoInError) as ei:
        root.run()
    assert ei.value.code == errors.InternalError
    assert ei.value.info == "Top level add in execution"


def test_root_level_add_from_outside_fails_the_waiting_flow(virtual_tool):
    seen = []
    root = AsyncSteps(virtual_tool)
    root.add(lambda as_: as_.wait_external(), lambda as_, code: seen.append((code, as_.state.error_info)))
    root.execute(lambda as_, code: seen.append(("unhandled", code)))
    virtual_tool.run()
    with pytest.raises(FutoInError) as ei:
        root.add(noop)
    assert ei.value.code == errors.InternalError
    virtual_tool.run()
    assert seen == [("InternalError", "Top level add in execution"), ("unhandled", "InternalError")]
    root.add(noop)  # idle again: steps for its next run


# ---- found by misuse fuzzing: memory safety of odd objects ----

def test_partial_subclass_whose_func_is_made_on_each_read(virtual_tool):
    # arity_of() kept using `func` after dropping the only reference to it
    import functools

    class P(functools.partial):
        @property
        def func(self):
            def fresh(as_, a, b, c):
                pass
            return fresh

    got = []
    root = AsyncSteps(virtual_tool)
    root.add(P(lambda as_, *values: as_.success(len(values))))
    root.add(lambda as_, n: got.append(n))
    root.run()
    assert got == [3]  # the arity of what `func` says: three values


def test_the_reused_step_view_is_not_reachable_through_gc(virtual_tool):
    # a finished view kept for reuse had no tool: repr() dereferenced NULL
    import gc
    from futoin_polyglot import AsyncStepsBase
    AsyncSteps(virtual_tool).add(lambda as_: as_.success()).run()
    for o in gc.get_objects():
        if isinstance(o, AsyncStepsBase):
            repr(o)
            o._tool  # noqa: B018 (a property read is the check)


def test_a_weakref_to_a_view_found_through_gc_stays(virtual_tool):
    # reuse of the spare view dropped the weak references made to it
    import gc
    import weakref
    from futoin_polyglot import AsyncStepsBase
    AsyncSteps(virtual_tool).add(lambda as_: as_.success()).run()
    found = [o for o in gc.get_objects() if isinstance(o, AsyncStepsBase)]
    refs = [weakref.ref(o) for o in found]
    AsyncSteps(virtual_tool).add(lambda as_: as_.success()).run()
    assert [weakref.getweakrefcount(o) for o in found] == [1] * len(found)
    del refs


def test_a_step_handle_cannot_be_copied_and_releases_once(virtual_tool):
    # a copy shared the handle: the second release read the freed step at address 1
    import copy
    from futoin_polyglot import StepHandle
    h = StepHandle(lambda as_: None)
    with pytest.raises(TypeError, match="cannot be copied"):
        copy.copy(h)
    h.close()
    h.close()


def test_an_isync_whose_sync_capsule_is_fresh_on_each_read(virtual_tool):
    # sync_of() dropped the capsule (the only reference to the core object)
    # before the flow used the FutoInSync* inside it
    class S:
        def lock(self, as_):
            pass

        def unlock(self, as_):
            pass

        @property
        def _sync(self):
            return Mutex(tool=virtual_tool)._sync

    got = []
    root = AsyncSteps(virtual_tool)
    root.sync(S(), lambda as_: as_.success("in"))
    root.add(lambda as_, v: got.append(v))
    root.run()
    assert got == ["in"]


def test_a_cycle_through_a_cstep_is_collected():
    import gc
    import weakref

    class Holder:
        pass

    h = Holder()
    w = weakref.ref(h)
    h.step = CStep(0x1000, keep=h)
    del h
    gc.collect()
    assert w() is None


def test_set_cancel_refuses_a_coroutine_function(virtual_tool):
    async def on_cancel(as_):
        pass

    seen = []

    def step(as_):
        try:
            as_.set_cancel(on_cancel)
        except TypeError as e:
            seen.append(str(e))
        as_.success()

    AsyncSteps(virtual_tool).add(step).run()
    assert len(seen) == 1 and "async" in seen[0]


def test_tool_callbacks_refuse_a_coroutine_function(virtual_tool):
    async def later():
        pass

    for schedule in (lambda: virtual_tool.immediate(later), lambda: virtual_tool.deferred(5, later)):
        with pytest.raises(TypeError, match="async def"):
            schedule()


def test_address_errors_name_the_address():
    with pytest.raises(ValueError, match=r"^0x10000 "):
        wrap(0x10000)


def test_a_cancel_handlers_as_cannot_complete_its_cancelled_step(virtual_tool):
    # as in the JS reference (there: InternalError): the step is cancelled,
    # success() or error() on it would only be ignored; state stays readable
    out = []

    def step(as_):
        def on_cancel(as_):
            out.append(as_.state["n"])
            for name, call in [("success", lambda: as_.success(1)), ("error", lambda: as_.error("X")),
                               ("set_timeout", lambda: as_.set_timeout(5)),
                               ("wait_external", as_.wait_external),
                               ("set_cancel", lambda: as_.set_cancel(lambda as_: None)),
                               ("break_loop", as_.break_loop)]:
                with pytest.raises(RuntimeError, match="cancel"):
                    call()
                out.append(name)

        as_.set_cancel(on_cancel)

    root = AsyncSteps(virtual_tool)
    root.state["n"] = 7
    root.add(step)
    root.execute()
    virtual_tool.iterate()
    root.cancel()
    assert out == [7, "success", "error", "set_timeout", "wait_external", "set_cancel", "break_loop"]


@pytest.mark.parametrize("call, exc", [
    (lambda: Tool(burst=2**64), ValueError),
    (lambda: Tool(burst=0), ValueError),  # as tool.burst = 0
    (lambda: Tool(burst=-1), ValueError),
    (lambda: Tool(virtual_time=True).advance(-1), ValueError),
    (lambda: Tool(virtual_time=True).advance(2**64), ValueError),
    (lambda: Tool().deferred(2**64, noop), ValueError),
    (lambda: Tool().iterate(2**64), ValueError),
    (lambda: wrap(-1), ValueError),
    (lambda: wrap(2**64), ValueError),
    (lambda: is_native(2**64), ValueError),
    (lambda: futoin_polyglot.run("x"), TypeError),
], ids=["burst 2**64", "burst 0", "burst -1", "advance -1", "advance 2**64", "deferred 2**64", "iterate 2**64",
        "wrap -1", "wrap 2**64", "is_native 2**64", "run str"])
def test_numbers_out_of_range_are_value_errors(call, exc):
    # OverflowError (or AttributeError for run()) came from the conversions
    with pytest.raises(exc) as info:
        call()
    assert type(info.value) is exc


@pytest.mark.parametrize("ms", ["10", None, b"1", 1.5])
def test_set_timeout_of_no_int_is_a_type_error(virtual_tool, ms):
    got = {}

    def step(as_):
        try:
            as_.set_timeout(ms)
        except Exception as e:
            got["exc"] = e
        as_.success()

    AsyncSteps(virtual_tool).add(step).run()
    assert type(got["exc"]) is TypeError


def test_a_step_whose_root_it_cancelled_is_out_of_service(virtual_tool):
    # as in the JS reference (cancel() ends every step; their interfaces throw
    # "out of service"): building on it was silently dropped, bool() said True
    out = []

    def step(as_):
        root.cancel()
        out.append(bool(as_))
        for name, call in [("add", lambda: as_.add(noop)), ("parallel", lambda: as_.parallel()),
                           ("loop", lambda: as_.loop(noop)), ("repeat", lambda: as_.repeat(2, noop)),
                           ("for_each", lambda: as_.for_each([1], noop)),
                           ("sync", lambda: as_.sync(Mutex(), noop)),
                           ("success", lambda: as_.success(1)), ("error", lambda: as_.error("X")),
                           ("set_timeout", lambda: as_.set_timeout(5)),
                           ("set_cancel", lambda: as_.set_cancel(noop)),
                           ("wait_external", as_.wait_external), ("break_loop", as_.break_loop)]:
            with pytest.raises(RuntimeError, match="cancel"):
                call()
            out.append(name)
        out.append(as_.state["n"])  # the state stays readable

    root = AsyncSteps(virtual_tool)
    root.state["n"] = 7
    root.add(step).add(lambda as_: out.append("next step"))
    root.execute(lambda as_, code: out.append(code))
    virtual_tool.run()
    assert out == [False, "add", "parallel", "loop", "repeat", "for_each", "sync", "success", "error",
                   "set_timeout", "set_cancel", "wait_external", "break_loop", 7]
    assert root  # idle again, usable for a next run
    root.add(lambda as_: out.append("rerun"))
    root.execute()
    virtual_tool.run()
    assert out[-1] == "rerun"
