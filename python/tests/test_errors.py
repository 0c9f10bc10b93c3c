"""Errors: as_.error(), Python exceptions in steps, handlers, spec 1.2 / 1.2.1,
the error code constants and FutoInError."""

from __future__ import annotations

import pytest

from futoin_polyglot import AsyncSteps, FutoInError, Mutex, errors


def test_error_raises_immediately_and_becomes_flow_error(virtual_tool):
    seen = []

    def step(as_):
        try:
            as_.error("MyError", "details")
        except FutoInError as e:
            seen.append(("raised", e.code, e.info))
            raise
        seen.append("not reached")

    as_ = AsyncSteps(virtual_tool)
    as_.add(step, lambda as_, code: seen.append(("handler", code, as_.state.error_info)))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert seen == [("raised", "MyError", "details"), ("handler", "MyError", "details")]
    assert ei.value.code == "MyError"
    assert ei.value.info == "details"


def test_error_without_info_has_empty_info(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("Plain"), lambda as_, c: seen.append(as_.state.error_info))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert seen == [""]
    assert ei.value.info == "" and str(ei.value) == "Plain"


def test_error_keyword_arguments(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error(code="KwCode", info="kw info"))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert (ei.value.code, ei.value.info) == ("KwCode", "kw info")


def test_error_last_exception_is_the_futoin_error(virtual_tool):
    seen = {}
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("Coded", "i"), lambda as_, c: seen.update(le=as_.state.last_exception))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert isinstance(seen["le"], FutoInError)
    assert (seen["le"].code, seen["le"].info) == ("Coded", "i")
    assert ei.value.last_exception is seen["le"]


class CustomError(Exception):
    pass


def test_python_exception_becomes_class_name_code(virtual_tool):
    exc = CustomError("something broke")
    seen = {}

    def step(as_):
        raise exc

    def handler(as_, code):
        seen.update(code=code, info=as_.state.error_info, le=as_.state.last_exception)

    as_ = AsyncSteps(virtual_tool)
    as_.add(step, handler)
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert seen["code"] == "CustomError"
    assert seen["info"] == "something broke"
    assert seen["le"] is exc
    assert ei.value.code == "CustomError"
    assert ei.value.info == "something broke"
    assert ei.value.last_exception is exc
    assert exc.__traceback__ is not None


@pytest.mark.parametrize(
    "exc, code, info",
    [
        (ValueError("bad value"), "ValueError", "bad value"),
        (KeyError("k"), "KeyError", "'k'"),
        (ZeroDivisionError("division by zero"), "ZeroDivisionError", "division by zero"),
        (RuntimeError(), "RuntimeError", ""),
    ],
)
def test_builtin_exceptions(virtual_tool, exc, code, info):
    def step(as_):
        raise exc

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert (ei.value.code, ei.value.info) == (code, info)
    assert ei.value.last_exception is exc
    assert ei.value.__cause__ is exc  # the traceback shows the failing line in the step


def test_raising_futoin_error_directly_keeps_code(virtual_tool):
    exc = FutoInError(errors.InvalidRequest, "raised directly")

    def step(as_):
        raise exc

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert (ei.value.code, ei.value.info) == ("InvalidRequest", "raised directly")
    assert ei.value.last_exception is exc


def test_handler_recovers_with_values(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("Oops"), lambda as_, code: as_.success("recovered", code, 7))
    as_.add(lambda as_, a, b, c: as_.success((a, b, c)))
    assert as_.run() == ("recovered", "Oops", 7)


def test_handler_reraises_new_code(virtual_tool):
    seen = []

    def inner_handler(as_, code):
        seen.append(code)
        as_.error("Translated", "from " + code)

    def outer(as_):
        as_.add(lambda as_: as_.error("Original"), inner_handler)

    as_ = AsyncSteps(virtual_tool)
    as_.add(outer, lambda as_, code: seen.append((code, as_.state.error_info)))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert seen == ["Original", ("Translated", "from Original")]
    assert ei.value.code == "Translated"


def test_handler_raising_python_exception(virtual_tool):
    exc = KeyError("in handler")
    seen = {}

    def handler(as_, code):
        raise exc

    def outer(as_):
        as_.add(lambda as_: as_.error("First"), handler)

    as_ = AsyncSteps(virtual_tool)
    as_.add(outer, lambda as_, code: seen.update(code=code, le=as_.state.last_exception))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert seen == {"code": "KeyError", "le": exc}
    assert ei.value.last_exception is exc


def test_silent_handler_continues_unwinding(virtual_tool):
    seen = []

    def outer(as_):
        as_.add(lambda as_: as_.error("Deep"), lambda as_, c: seen.append("inner " + c))

    as_ = AsyncSteps(virtual_tool)
    as_.add(outer, lambda as_, c: seen.append("outer " + c))
    as_.add(lambda as_: seen.append("next step (not reached)"))
    with pytest.raises(FutoInError):
        as_.run()
    assert seen == ["inner Deep", "outer Deep"]


def test_handler_adding_steps_is_implicit_success(virtual_tool):
    def handler(as_, code):
        as_.add(lambda as_: as_.success("alt path " + code))

    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("Primary"), handler)
    as_.add(lambda as_, v: as_.success(v + "!"))
    assert as_.run() == "alt path Primary!"


def test_spec_1_2_example_exact_output(virtual_tool):
    out = []

    def l0(as_):
        out.append("Level 0 func")

        def l1(as_):
            out.append("Level 1 func")
            as_.error("myerror")

        def l1_onerror(as_, error):
            out.append("Level 1 onerror: " + error)
            as_.error("newerror")

        as_.add(l1, l1_onerror)

    def l0_onerror(as_, error):
        out.append("Level 0 onerror: " + error)
        as_.success("Prm")

    as_ = AsyncSteps(virtual_tool)
    as_.add(l0, l0_onerror)

    def func2(as_, param):
        out.append("Level 0 func2: " + param)
        as_.success()

    as_.add(func2)
    assert as_.run() is None
    assert out == [
        "Level 0 func",
        "Level 1 func",
        "Level 1 onerror: myerror",
        "Level 0 onerror: newerror",
        "Level 0 func2: Prm",
    ]


def test_spec_1_2_1_example_exact_output(virtual_tool):
    out = []

    def l0(as_):
        out.append("Level 0 func")

        def l1(as_):
            out.append("Level 1 func")
            as_.error("first")

        def l1_onerror(as_, error):
            out.append("Level 1 onerror: " + error)

            def l2(as_):
                out.append("Level 2 func")
                as_.error("second")

            as_.add(l2, lambda as_, error: out.append("Level 2 onerror: " + error))

        as_.add(l1, l1_onerror)

    as_ = AsyncSteps(virtual_tool)
    as_.add(l0, lambda as_, error: out.append("Level 0 onerror: " + error))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "second"
    assert out == [
        "Level 0 func",
        "Level 1 func",
        "Level 1 onerror: first",
        "Level 2 func",
        "Level 2 onerror: second",
        "Level 0 onerror: second",
    ]
    assert out.count("Level 1 onerror: first") == 1


def test_error_codes_constants():
    expected = [
        "ConnectError", "CommError", "UnknownInterface", "NotSupportedVersion", "NotImplemented",
        "Unauthorized", "InternalError", "InvokerError", "InvalidRequest", "DefenseRejected",
        "PleaseReauth", "SecurityError", "Timeout", "LoopBreak", "LoopCont", "PromiseReject",
    ]
    for name in expected:
        assert getattr(errors, name) == name
    assert sorted(errors.ALL_CODES) == sorted(expected)
    assert len(set(errors.ALL_CODES)) == len(errors.ALL_CODES)


def test_futoin_error_object():
    cause = ValueError("x")
    e = FutoInError("Code", "info text", cause)
    assert isinstance(e, Exception)
    assert e.code == "Code" and e.info == "info text" and e.last_exception is cause
    assert str(e) == "Code: info text"
    assert repr(e) == "FutoInError('Code', 'info text')"
    bare = FutoInError("Bare")
    assert bare.info == "" and bare.last_exception is None and str(bare) == "Bare"


def test_unhandled_error_callback_sees_state(virtual_tool):
    seen = []
    exc = OSError("disk")

    def step(as_):
        raise exc

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    as_.execute(lambda as_, code: seen.append((code, as_.state.error_info, as_.state.last_exception)))
    virtual_tool.run()
    assert seen == [("OSError", "disk", exc)]


def test_error_info_refreshed_per_error(virtual_tool):
    seen = []

    def first_handler(as_, code):
        seen.append(as_.state.error_info)
        as_.success()

    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("A", "info A"), first_handler)
    as_.add(lambda as_: as_.error("B", "info B"), lambda as_, c: seen.append(as_.state.error_info))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert seen == ["info A", "info B"]
    assert ei.value.info == "info B"


def test_writes_to_error_info_and_last_exception_stay_until_the_next_error(virtual_tool):
    """as in futoin-asyncsteps, whose state is a plain object: what a step
    writes there is read back (it was replaced by the engine's value on
    every read), until the engine records the next error"""
    seen = []
    mine = RuntimeError("mine")

    def step(as_):
        as_.state.error_info = "written"
        as_.state["last_exception"] = mine
        seen.append((as_.state.error_info, as_.state.last_exception))
        as_.error("E", "info1")

    def handler(as_, code):
        seen.append((as_.state.error_info, as_.state.last_exception.code))
        as_.state.error_info = "changed"
        as_.state.last_exception = None
        seen.append((as_.state.error_info, as_.state.last_exception))
        as_.success()

    def later(as_):
        seen.append((as_.state.error_info, as_.state.last_exception))
        as_.error("F", "info2")

    as_ = AsyncSteps(virtual_tool)
    as_.add(step, handler)
    as_.add(later, lambda as_, code: seen.append((as_.state.error_info, as_.state.last_exception.code)))
    with pytest.raises(FutoInError):
        as_.run()
    assert seen == [
        ("written", mine),
        ("info1", "E"),
        ("changed", None),
        ("changed", None),
        ("info2", "F"),
    ]


def test_last_exception_follows_errors_raised_by_the_engine(virtual_tool):
    """spec 1.7: last_exception is populated with FutoIn errors as well: a
    Timeout (or a C step's error) after a Python error shows as a
    FutoInError of its own, not the earlier exception"""
    seen = []
    first = ValueError("first")

    def fail(as_):
        raise first

    def recover(as_, code):
        seen.append((code, as_.state.last_exception))
        as_.success()

    def handled(as_, code):
        le = as_.state.last_exception
        seen.append((code, type(le).__name__, le.code, le.info))

    as_ = AsyncSteps(virtual_tool)
    as_.add(fail, recover)
    as_.add(lambda as_: as_.set_timeout(10), handled)
    as_.add(lambda as_: as_.set_timeout(10))
    unhandled = []
    as_.execute(lambda as_, code: unhandled.append((code, as_.state.last_exception)))
    virtual_tool.run()
    assert seen == [("ValueError", first), ("Timeout", "FutoInError", "Timeout", "")]
    assert [(c, type(le).__name__, le.code) for c, le in unhandled] == [("Timeout", "FutoInError", "Timeout")]
    # the same error seen again further out keeps its exception object
    outer = []
    as2 = AsyncSteps(virtual_tool)
    as2.add(lambda as_: as_.add(fail, lambda as_, c: outer.append(as_.state.last_exception)),
            lambda as_, c: outer.append(as_.state.last_exception))
    as2.execute(lambda as_, code: None)
    virtual_tool.run()
    assert outer == [first, first]


def test_an_engine_error_with_the_code_of_an_earlier_raised_one_gets_its_own(virtual_tool):
    """a Python FutoInError('Timeout') handled, then a real Timeout: its
    last_exception was the old object (matched by code and info)"""
    seen = []
    first = FutoInError("Timeout")

    def fail(as_):
        raise first

    as_ = AsyncSteps(virtual_tool)
    as_.add(fail, lambda as_, code: as_.success())
    as_.add(lambda as_: as_.set_timeout(10),
            lambda as_, code: seen.append((code, as_.state.last_exception)))
    as_.execute(lambda as_, code: None)
    virtual_tool.run()
    assert len(seen) == 1 and seen[0][0] == "Timeout"
    assert seen[0][1] is not first
    assert isinstance(seen[0][1], FutoInError) and seen[0][1].code == "Timeout"


def test_unicode_code_and_info(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("Ошибка", "info \u00e9\u4e2d\U0001f600"),
            lambda as_, code: as_.success(code, as_.state.error_info))
    assert as_.run() == ("Ошибка", "info \u00e9\u4e2d\U0001f600")


def test_exception_with_broken_str(virtual_tool):
    class BadStr(Exception):
        def __str__(self):
            raise RuntimeError("no str for you")

    exc = BadStr()

    def step(as_):
        raise exc

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "BadStr"
    assert ei.value.last_exception is exc


def test_async_stack_holds_the_failing_step_and_the_handlers_of_this_run(virtual_tool):
    # spec 1.7: an implementation-defined stack of step handler references
    seen = []

    def fail(as_):
        as_.error("MyError")

    def inner_handler(as_, code):
        seen.append(list(as_.state.async_stack))

    def outer_handler(as_, code):
        seen.append(list(as_.state.async_stack))
        as_.success()

    def outer(as_):
        as_.add(fail, inner_handler)

    root = AsyncSteps(virtual_tool)
    root.add(outer, outer_handler)
    root.run()
    assert seen == [[fail, inner_handler], [fail, inner_handler, outer_handler]]
    root.add(lambda as_: as_.error("Again"), lambda as_, code: seen.append(len(as_.state.async_stack)))
    with pytest.raises(FutoInError):
        root.run()
    assert seen[-1] == 2  # a new run starts a new stack


def test_async_stack_holds_a_step_that_failed_from_outside(virtual_tool):
    # a Timeout (or an error raised from outside) fails a step that raised
    # nothing: it is still the failing step, as in futoin-asyncsteps
    seen = []

    def slow(as_):
        as_.set_timeout(10)

    def on_timeout(as_, code):
        seen.append((code, list(as_.state.async_stack)))

    def outer(as_):
        as_.add(slow, on_timeout)

    def outer_handler(as_, code):
        seen.append((code, list(as_.state.async_stack)))
        as_.success()

    root = AsyncSteps(virtual_tool)
    root.add(outer, outer_handler)
    root.run()
    assert seen == [("Timeout", [slow, on_timeout]), ("Timeout", [slow, on_timeout, outer_handler])]


def test_error_handlers_take_the_code_as_steps_take_values(virtual_tool):
    # JS-style leniency, as for steps (README): a handler may ignore the
    # code, or take more parameters (None)
    got = []

    def three(as_, code, extra):
        got.append((code, extra))
        as_.success("three")

    class Handler:
        def on(self, as_):
            as_.success("method")

    def fail(as_):
        as_.error("Real", "the real error")

    assert AsyncSteps(virtual_tool).add(fail, lambda as_: as_.success("none")).run() == "none"
    assert AsyncSteps(virtual_tool).add(fail, three).run() == "three"
    assert got == [("Real", None)]
    assert AsyncSteps(virtual_tool).add(fail, Handler().on).run() == "method"
    p = AsyncSteps(virtual_tool)
    p.parallel(lambda as_: as_.success("par")).add(fail)
    assert p.run() == "par"
    m = AsyncSteps(virtual_tool)
    m.sync(Mutex(tool=virtual_tool), fail, lambda as_: as_.success("sync"))
    assert m.run() == "sync"


def test_exception_text_reaches_the_error_info_whole(virtual_tool):
    # a NUL cut the info short (C text); a FutoInError's info of no str was lost
    for exc, info in [(ValueError("before\0after"), "before\\0after"), (FutoInError("Code", 5), "5")]:
        def step(as_, exc=exc):
            raise exc

        with pytest.raises(FutoInError) as got:
            AsyncSteps(virtual_tool).add(step).run()
        assert got.value.info == info


def test_a_keyboard_interrupt_from_str_of_the_exception_is_not_swallowed(virtual_tool):
    class Loud(Exception):
        def __str__(self):
            raise KeyboardInterrupt("from __str__")

    def step(as_):
        raise Loud()

    with pytest.raises(KeyboardInterrupt):
        AsyncSteps(virtual_tool).add(step).run()
