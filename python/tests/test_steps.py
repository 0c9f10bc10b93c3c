"""AsyncSteps API: add, levels, values, arity, parallel, state, timeouts,
cancel, wait_external, copy_from, new_instance, execute/cancel, binary/wrap."""

from __future__ import annotations

import copy
import threading

import pytest

import futoin_polyglot as fp
from futoin_polyglot import AsyncSteps, FutoInError, Mutex, State, Tool, errors, wrap


# ---- add / chaining / levels ----


def test_add_returns_same_object_for_chaining(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    out = []
    r1 = as_.add(lambda as_: out.append(1))
    r2 = r1.add(lambda as_: out.append(2)).add(lambda as_: out.append(3))
    assert r1 is as_ and r2 is as_
    assert as_.run() is None
    assert out == [1, 2, 3]


def test_add_inside_step_returns_the_step_view(virtual_tool):
    seen = {}

    def step(as_):
        seen["same"] = as_.add(lambda as_: None) is as_

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    as_.run()
    assert seen == {"same": True}


def test_levels_execution_order_spec_1_1(virtual_tool):
    out = []

    def l0_1(as_):
        out.append("Level 0 add #1")

        def l1_1(as_):
            out.append("Level 1 add #1")
            as_.add(lambda as_: out.append("Level 2 add #1"))
            as_.parallel().add(lambda as_: out.append("Level 2 parallel #2"))
            as_.add(lambda as_: out.append("Level 2 add #3"))

        as_.add(l1_1)
        as_.parallel().add(lambda as_: out.append("Level 1 parallel #2"))
        as_.add(lambda as_: out.append("Level 1 add #3"))

    as_ = AsyncSteps(virtual_tool)
    as_.add(l0_1)
    as_.parallel().add(lambda as_: out.append("Level 0 parallel #2"))
    as_.add(lambda as_: out.append("Level 0 add #3"))
    as_.run()
    assert out == [
        "Level 0 add #1",
        "Level 1 add #1",
        "Level 2 add #1",
        "Level 2 parallel #2",
        "Level 2 add #3",
        "Level 1 parallel #2",
        "Level 1 add #3",
        "Level 0 parallel #2",
        "Level 0 add #3",
    ]


def test_substep_result_goes_to_next_step_of_parent_level(virtual_tool):
    def outer(as_):
        as_.add(lambda as_: as_.success("inner"))

    as_ = AsyncSteps(virtual_tool)
    as_.add(outer)
    as_.add(lambda as_, v: as_.success(v + "!"))
    assert as_.run() == "inner!"


def test_implicit_success_without_substeps(virtual_tool):
    out = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: out.append("a"))  # returns without success()
    as_.add(lambda as_, *args: out.append(args))
    assert as_.run() is None
    assert out == ["a", ()]


# ---- values ----

BIG = 2**100


class Thing:
    pass


@pytest.mark.parametrize(
    "value",
    [
        0,
        -1,
        2**63 - 1,
        -(2**63),
        2**63,  # just beyond int64
        BIG,
        -BIG,
        1.5,
        -0.25,
        "",
        "text",
        "unicode \u00e9\u4e2d\U0001f600",
        b"",
        b"\x00\xffbytes",
        None,
        True,
        False,
        [1, "two", [3]],
        {"k": [1, 2], 3: None},
        (1, 2),
    ],
    ids=lambda v: type(v).__name__ + ":" + repr(v)[:20],
)
def test_single_value_round_trip(virtual_tool, value):
    got = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(value))
    as_.add(lambda as_, v: got.append(v))
    as_.run()
    assert len(got) == 1
    assert got[0] == value
    assert type(got[0]) is type(value)


def test_four_values_of_mixed_types(virtual_tool):
    got = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(BIG, 2.5, "s", b"b"))
    as_.add(lambda as_, a, b, c, d: got.append((a, b, c, d)))
    as_.run()
    assert got == [(BIG, 2.5, "s", b"b")]
    assert [type(x) for x in got[0]] == [int, float, str, bytes]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 20])
def test_n_values_reach_varargs_step(virtual_tool, n):
    values = [object() if i % 3 == 0 else i for i in range(n)]
    got = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(*values))
    as_.add(lambda as_, *args: got.append(args))
    as_.run()
    assert len(got) == 1
    assert len(got[0]) == n
    assert all(a is b or a == b for a, b in zip(got[0], values))


def test_more_than_four_values_as_run_result(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(1, None, "x", 4.0, BIG, [6]))
    assert as_.run() == (1, None, "x", 4.0, BIG, [6])


def test_object_identity_preserved(virtual_tool):
    obj, lst, dct = Thing(), [1], {"a": 1}

    class MyStr(str):
        pass

    s = MyStr("sub")
    got = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(obj, lst, dct, s))
    as_.add(lambda as_, a, b, c, d: got.extend([a, b, c, d]))
    as_.run()
    assert got[0] is obj
    assert got[1] is lst
    assert got[2] is dct
    assert got[3] is s and type(got[3]) is MyStr


def test_values_are_released_after_use(virtual_tool):
    import weakref

    obj = Thing()
    ref = weakref.ref(obj)
    as_ = AsyncSteps(virtual_tool)
    box = [obj]
    as_.add(lambda as_: as_.success(box.pop()))
    as_.add(lambda as_, v: None)
    del obj
    as_.run()
    assert box == []
    as_._free()
    del as_
    import gc

    gc.collect()
    assert ref() is None


# ---- JS-style arity leniency ----


def test_extra_values_are_dropped(virtual_tool):
    got = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(1, 2, 3))
    as_.add(lambda as_, a: got.append(a))
    as_.add(lambda as_: as_.success(1, 2, 3, 4, 5, 6))
    as_.add(lambda as_, a, b: got.append((a, b)))
    as_.add(lambda as_: as_.success("x"))
    as_.add(lambda as_: got.append("none taken"))
    as_.run()
    assert got == [1, (1, 2), "none taken"]


def test_missing_required_values_are_none(virtual_tool):
    got = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(1))
    as_.add(lambda as_, a, b, c: got.append((a, b, c)))
    as_.add(lambda as_, a, b, c, d, e, f: got.append((a, b, c, d, e, f)))
    as_.run()
    assert got == [(1, None, None), (None,) * 6]


def test_missing_optional_values_keep_defaults(virtual_tool):
    got = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(1))
    as_.add(lambda as_, a, b="dflt": got.append((a, b)))
    as_.run()
    assert got == [(1, "dflt")]


def test_arity_of_bound_method(virtual_tool):
    class Handler:
        def __init__(self):
            self.got = None

        def step(self, as_, a, b):
            self.got = (a, b)

    h = Handler()
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(1, 2, 3, 4))
    as_.add(h.step)
    as_.run()
    assert h.got == (1, 2)


def test_callable_object_gets_all_values(virtual_tool):
    class Step:
        got = None

        def __call__(self, as_, *args):
            Step.got = args

    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(1, 2))
    as_.add(Step())
    as_.run()
    assert Step.got == (1, 2)


def test_call_operator_is_success(virtual_tool):
    """spec 2.2.2: where the language has a call operator, it is success()"""
    seen = []

    box = {}

    def wait(as_):
        as_.wait_external()
        box["as"] = as_

    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_(1, "a"))
    as_.add(lambda as_, *a: seen.append(a))
    as_.add(wait)
    as_.add(lambda as_, *a: seen.append(a))
    as_.execute()
    virtual_tool.run()
    box["as"]("later", 2)  # from outside, as success() can be
    virtual_tool.run()
    assert seen == [(1, "a"), ("later", 2)]
    # a second completion is the misuse success() twice is
    as2 = AsyncSteps(virtual_tool)
    as2.add(lambda as_: (as_(), as_()), lambda as_, code: (seen.append((code, as_.state.error_info)), as_()))
    as2.add(lambda as_: None)
    as2.run()
    assert seen[-1] == ("InternalError", "success() called twice")


def test_success_step(virtual_tool):
    out = []
    value = Thing()

    def work(as_):
        as_.add(lambda as_: out.append("sub"))
        as_.success_step(123, value)

    as_ = AsyncSteps(virtual_tool)
    r = as_.add(work)
    assert as_.success_step() is as_
    as_.add(lambda as_, *a: out.append(a))
    as_.add(work)
    res = as_.run()
    assert out == ["sub", (), "sub"]
    assert res[0] == 123 and res[1] is value and r is as_


# ---- parallel ----


def test_parallel_runs_all_branches_before_next_step(virtual_tool):
    out = []
    as_ = AsyncSteps(virtual_tool)
    p = as_.parallel()
    assert isinstance(p, AsyncSteps) and p is not as_
    for i in range(3):
        def branch(as_, i=i):
            out.append(("start", i))
            as_.add(lambda as_: out.append(("sub", i)))

        p.add(branch)
    as_.add(lambda as_: out.append("after"))
    as_.run()
    assert sorted(x for x in out if x != "after") == sorted(
        [("start", i) for i in range(3)] + [("sub", i) for i in range(3)]
    )
    assert out[-1] == "after"
    # each branch is sequential inside
    for i in range(3):
        assert out.index(("start", i)) < out.index(("sub", i))


def test_parallel_branches_interleave_while_waiting(virtual_tool):
    out = []
    as_ = AsyncSteps(virtual_tool)
    p = as_.parallel()

    def b(name, delay):
        def step(as_):
            out.append((name, "start", virtual_tool.now()))
            as_.set_timeout(delay)

        def done(as_, code):
            out.append((name, code, virtual_tool.now()))
            as_.success()

        return lambda as_: as_.add(step, done)

    p.add(b("slow", 300))
    p.add(b("fast", 100))
    as_.run()
    assert out == [
        ("slow", "start", 0),
        ("fast", "start", 0),
        ("fast", "Timeout", 100),
        ("slow", "Timeout", 300),
    ]


def test_parallel_success_values_are_not_forwarded(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    p = as_.parallel()
    p.add(lambda as_: as_.success(1))
    p.add(lambda as_: as_.success(2))
    as_.add(lambda as_, *args: as_.success(len(args)))
    assert as_.run() == 0


def test_parallel_failure_cancels_siblings_and_calls_onerror(virtual_tool):
    out = []

    def outer(as_):
        p = as_.parallel(lambda as_, code: out.append(("parallel onerror", code)))

        def waiting(as_):
            as_.set_cancel(lambda as_: out.append("sibling cancelled"))

        p.add(waiting)
        p.add(lambda as_: as_.error("BranchFail", "b2"))

    as_ = AsyncSteps(virtual_tool)
    as_.add(outer, lambda as_, code: out.append(("outer onerror", code, as_.state.error_info)))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "BranchFail"
    assert out == [
        "sibling cancelled",
        ("parallel onerror", "BranchFail"),
        ("outer onerror", "BranchFail", "b2"),
    ]


def test_parallel_onerror_recovers(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    p = as_.parallel(lambda as_, code: as_.success())
    p.add(lambda as_: as_.error("Boom"))
    as_.add(lambda as_: as_.success("continued"))
    assert as_.run() == "continued"


def test_parallel_branch_failure_stops_sibling_substeps(virtual_tool):
    out = []

    def slow(as_):
        as_.add(lambda as_: as_.set_timeout(1000), lambda as_, c: out.append("slow handled " + c))
        as_.add(lambda as_: out.append("slow second step"))

    def failing(as_):
        as_.add(lambda as_: as_.set_timeout(10), lambda as_, c: as_.error("Fail"))

    as_ = AsyncSteps(virtual_tool)
    p = as_.parallel()
    p.add(slow)
    p.add(failing)
    assert fp_result(as_) == ("error", "Fail")
    assert out == []
    assert virtual_tool.now() == 10


def fp_result(as_):
    try:
        return ("ok", as_.run())
    except FutoInError as e:
        return ("error", e.code)


# ---- state ----


def test_state_mapping_and_attribute_access(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    st = as_.state
    assert isinstance(st, State) and isinstance(st, dict)
    st["a"] = 1
    st.b = 2
    assert st.a == 1 and st["b"] == 2
    del st.a
    assert "a" not in st
    with pytest.raises(AttributeError):
        st.missing
    with pytest.raises(AttributeError):
        del st.missing
    assert as_.state is st  # one mapping per root


def test_state_is_shared_by_steps_and_parallel_branches(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.state.base = 10
    p = as_.parallel()
    p.add(lambda as_: as_.state.__setitem__("r1", as_.state.base + 1))
    p.add(lambda as_: setattr(as_.state, "r2", as_.state["base"] + 2))

    def sub(as_):
        as_.add(lambda as_: setattr(as_.state, "r3", 3))

    p.add(sub)
    as_.add(lambda as_: as_.success(as_.state.r1 + as_.state.r2 + as_.state.r3))
    assert as_.run() == 11 + 12 + 3
    assert as_.state.r1 == 11


def test_state_special_keys(virtual_tool):
    seen = {}
    as_ = AsyncSteps(virtual_tool)
    st0 = as_.state
    assert st0["error_info"] == ""
    assert st0["last_exception"] is None
    assert isinstance(st0["async_stack"], list)

    def handler(as_, code):
        st = as_.state
        seen.update(code=code, info=st.error_info, exc=st.last_exception, stack=st.async_stack)
        as_.success()

    as_.add(lambda as_: as_.error("MyCode", "my info"), handler)
    as_.run()
    assert seen["code"] == "MyCode"
    assert seen["info"] == "my info"
    assert isinstance(seen["exc"], FutoInError) and seen["exc"].code == "MyCode"
    assert isinstance(seen["stack"], list)


def test_root_id_same_in_flow_different_per_branch(virtual_tool):
    ids = {}
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: ids.__setitem__("s1", as_.root_id()))
    p = as_.parallel()
    p.add(lambda as_: ids.__setitem__("p1", as_.root_id()))
    p.add(lambda as_: ids.__setitem__("p2", as_.root_id()))
    as_.add(lambda as_: as_.add(lambda as_: ids.__setitem__("s2", as_.root_id())))
    as_.run()
    assert ids["s1"] == ids["s2"] == as_.root_id()
    assert len({ids["s1"], ids["p1"], ids["p2"]}) == 3


def test_bool_and_same_thread(virtual_tool):
    seen = {}

    def step(as_):
        seen["bool"] = bool(as_)
        seen["same"] = as_.is_same_thread()
        seen["view"] = as_
        seen["root while running"] = bool(root)
        as_.add(lambda inner: seen.__setitem__("outer while inner runs", bool(as_)))

    as_ = root = AsyncSteps(virtual_tool)
    assert bool(as_) is True
    as_.add(step)
    as_.add(lambda as_: seen.__setitem__("old_view_after", bool(seen["view"])))
    as_.run()
    assert seen["bool"] is True and seen["same"] is True
    assert seen["old_view_after"] is False
    # as the C++ reference's bool cast: usable for add() and execute() only
    # while not executing; an outer step not while its sub-steps run
    assert seen["root while running"] is False and seen["outer while inner runs"] is False
    assert bool(as_) is True  # the root stays valid until freed
    as_._free()
    assert bool(as_) is False


# ---- timeouts, cancel, wait_external ----


def test_set_timeout_raises_timeout_in_virtual_time(virtual_tool):
    out = []

    def step(as_):
        as_.set_timeout(10_000)

    def handler(as_, code):
        out.append((code, virtual_tool.now()))

    as_ = AsyncSteps(virtual_tool)
    as_.add(step, handler)
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == errors.Timeout == "Timeout"
    assert out == [("Timeout", 10_000)]


def test_timeout_timer_is_removed_when_step_completes(virtual_tool):
    box = {}

    def waiting(as_):
        as_.set_timeout(1000)
        box["as"] = as_

    def timer_step(as_):
        as_.set_timeout(200)

    timer = AsyncSteps(virtual_tool)
    timer.add(timer_step, lambda as_, code: (box["as"].success("early"), as_.success()))
    timer.execute()

    as_ = AsyncSteps(virtual_tool)
    as_.add(waiting)
    as_.add(lambda as_, v: as_.success(v, virtual_tool.now()))
    assert as_.run() == ("early", 200)
    virtual_tool.run()
    assert virtual_tool.now() == 200  # the 1000 ms timer did not stay armed


def test_set_timeout_from_outside_restarts_a_waiting_steps_timeout(virtual_tool):
    box = {}
    out = []

    def waiting(as_):
        as_.set_timeout(1000)
        box["as"] = as_

    def progress(as_):
        as_.set_timeout(200)

    def on_progress(as_, code):
        box["as"].set_timeout(50)  # from outside the waiting step: a new deadline
        as_.success()

    timer = AsyncSteps(virtual_tool)
    timer.add(progress, on_progress)
    timer.execute()

    as_ = AsyncSteps(virtual_tool)
    as_.add(waiting, lambda as_, code: out.append((code, virtual_tool.now())))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "Timeout"
    assert out == [("Timeout", 250)]


def test_wait_external_from_outside_on_a_waiting_step_changes_nothing(virtual_tool):
    box = {}

    def waiting(as_):
        as_.wait_external()
        box["as"] = as_

    def poke(as_):
        as_.set_timeout(10)

    def on_poke(as_, code):
        box["as"].wait_external()  # it waits already
        box["as"].success("done")
        as_.success()

    timer = AsyncSteps(virtual_tool)
    timer.add(poke, on_poke)
    timer.execute()
    as_ = AsyncSteps(virtual_tool)
    as_.add(waiting)
    assert as_.run() == "done"


def test_set_cancel_runs_on_timeout_before_onerror(virtual_tool):
    out = []

    def step(as_):
        as_.set_cancel(lambda as_: out.append(("cancel", virtual_tool.now())))
        as_.set_timeout(50)

    as_ = AsyncSteps(virtual_tool)
    as_.add(step, lambda as_, code: (out.append(("onerror", code)), as_.success()))
    as_.run()
    assert out == [("cancel", 50), ("onerror", "Timeout")]


def test_set_cancel_on_root_cancel_innermost_first(virtual_tool):
    out = []

    def outer(as_):
        as_.set_cancel(lambda as_: out.append("outer cancel"))

        def inner(as_):
            as_.set_cancel(lambda as_: out.append("inner cancel"))

        as_.add(inner, lambda as_, c: out.append("inner onerror"))

    as_ = AsyncSteps(virtual_tool)
    as_.add(outer, lambda as_, c: out.append("outer onerror"))
    as_.add(lambda as_: out.append("next step"))
    as_.execute(lambda as_, code: out.append(("unhandled", code)))
    virtual_tool.iterate()
    assert out == []
    as_.cancel()
    virtual_tool.run()
    assert out == ["inner cancel", "outer cancel"]


def test_set_cancel_on_error_unwinding(virtual_tool):
    out = []

    def outer(as_):
        as_.set_cancel(lambda as_: out.append("outer cancel"))
        as_.add(lambda as_: as_.error("Inner"), lambda as_, c: out.append("inner onerror " + c))

    as_ = AsyncSteps(virtual_tool)
    as_.add(outer, lambda as_, c: (out.append("outer onerror " + c), as_.success()))
    as_.run()
    assert out == ["inner onerror Inner", "outer cancel", "outer onerror Inner"]


def test_set_cancel_not_called_on_success(virtual_tool):
    out = []
    box = {}

    def step(as_):
        as_.set_cancel(lambda as_: out.append("cancel"))
        box["as"] = as_

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    as_.add(lambda as_, v: out.append(v))
    as_.execute()
    virtual_tool.iterate()
    box["as"].success("done")
    virtual_tool.run()
    assert out == ["done"]


def test_wait_external_success_from_scheduled_callback(virtual_tool):
    box = {}

    def waiting(as_):
        as_.wait_external()
        box["as"] = as_

    trigger = AsyncSteps(virtual_tool)
    trigger.add(lambda as_: as_.set_timeout(500),
                lambda as_, c: (box["as"].success(21), as_.success()))
    trigger.execute()

    as_ = AsyncSteps(virtual_tool)
    as_.add(waiting)
    as_.add(lambda as_, v: as_.success(v * 2, virtual_tool.now()))
    assert as_.run() == (42, 500)


def test_wait_external_success_from_outside_does_not_run_inline(virtual_tool):
    out = []
    box = {}

    def waiting(as_):
        as_.wait_external()
        box["as"] = as_

    as_ = AsyncSteps(virtual_tool)
    as_.add(waiting)
    as_.add(lambda as_: out.append("next"))
    as_.execute()
    virtual_tool.iterate()
    box["as"].success()
    assert out == []  # scheduled, not run inside success()
    virtual_tool.run()
    assert out == ["next"]


def test_error_from_outside_goes_to_handler(virtual_tool):
    box = {}
    seen = []

    def waiting(as_):
        as_.wait_external()
        box["as"] = as_

    as_ = AsyncSteps(virtual_tool)
    as_.add(waiting, lambda as_, c: seen.append((c, as_.state.error_info)))
    as_.execute(lambda as_, c: seen.append(("unhandled", c)))
    virtual_tool.iterate()
    with pytest.raises(FutoInError) as ei:
        box["as"].error("External", "outside")
    assert ei.value.code == "External"
    virtual_tool.run()
    assert seen == [("External", "outside"), ("unhandled", "External")]


def test_error_on_a_running_root_fails_its_flow_at_the_waiting_step(virtual_tool, capfd):
    """as futoin-asyncsteps' root error(): also where Python knows no step
    (a flow queued at a Mutex); an idle root only raises"""
    seen = []
    m = fp.Mutex(tool=virtual_tool)
    holder = AsyncSteps(virtual_tool)
    holder.sync(m, lambda as_: as_.wait_external())
    holder.execute()
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.sync(m, lambda as_: seen.append("entered")),
            lambda as_, c: seen.append((c, as_.state.error_info)))
    as_.add(lambda as_: seen.append("next"))
    as_.execute(lambda as_, c: seen.append(("unhandled", c)))
    virtual_tool.iterate()
    with pytest.raises(FutoInError) as ei:
        as_.error("External", "outside")
    assert ei.value.code == "External"
    assert as_.state.last_exception is ei.value
    virtual_tool.run()
    assert seen == [("External", "outside"), ("unhandled", "External")]
    holder.cancel()
    virtual_tool.run()
    assert seen == [("External", "outside"), ("unhandled", "External")]
    idle = AsyncSteps(virtual_tool)
    with pytest.raises(FutoInError) as ei:
        idle.error("Idle", "x")
    assert idle.state.last_exception is ei.value
    assert "ignored" not in capfd.readouterr().err


# ---- copy_from / new_instance ----


def make_model(log):
    model = AsyncSteps(Tool(virtual_time=True))
    model.state.a = "model-a"
    model.state.b = "model-b"
    model.add(lambda as_: log.append("m1"))
    p = model.parallel()
    p.add(lambda as_: log.append("mp1"))
    p.add(lambda as_: log.append("mp2"))
    model.repeat(2, lambda as_, i: log.append(("mr", i)))
    model.add(lambda as_: as_.success(as_.state.a, as_.state.b))
    return model


MODEL_LOG = ["m1", "mp1", "mp2", ("mr", 0), ("mr", 1)]


def test_copy_from_model_into_step(virtual_tool):
    log = []
    model = make_model(log)

    def step(as_):
        log.append("pre")
        assert as_.copy_from(model) is as_
        as_.add(lambda as_, a, b: as_.success("post", a, b))

    as_ = AsyncSteps(virtual_tool)
    as_.state.a = "mine"
    as_.add(step)
    assert as_.run() == ("post", "mine", "model-b")
    assert log == ["pre"] + MODEL_LOG


def test_copy_from_model_into_other_root(virtual_tool):
    log = []
    model = make_model(log)
    as_ = AsyncSteps(virtual_tool)
    as_.state.b = "kept"
    as_.copy_from(model)
    assert as_.state.a == "model-a" and as_.state.b == "kept"
    assert as_.run() == ("model-a", "kept")
    assert log == MODEL_LOG
    # the model is untouched and can be copied again
    assert model.state.b == "model-b"
    other = AsyncSteps(virtual_tool).copy_from(model)
    log.clear()
    assert other.run() == ("model-a", "model-b")
    assert log == MODEL_LOG


def test_copy_copy_of_a_model_is_the_specs_clone(virtual_tool):
    log = []
    model = make_model(log)
    clone = copy.copy(model)
    assert clone is not model and type(clone) is AsyncSteps
    assert clone.state.a == "model-a" and clone.state.b == "model-b"
    clone.state.b = "clone-b"
    assert model.state.b == "model-b"
    assert clone.run() == ("model-a", "clone-b")
    assert log == MODEL_LOG


def test_copy_deepcopy_of_a_model_copies_its_state_values_too(virtual_tool):
    model = AsyncSteps(virtual_tool)
    model.state.vals = [1]
    model.add(lambda as_: as_.success(list(as_.state.vals)))
    shallow, deep = copy.copy(model), copy.deepcopy(model)
    assert shallow.state.vals is model.state.vals
    assert deep.state.vals == [1] and deep.state.vals is not model.state.vals
    deep.state.vals.append(2)
    assert deep.run() == [1, 2]
    assert model.state.vals == [1]
    model.state.me = model  # a value that refers to the model: to the clone
    again = copy.deepcopy(model)
    assert again.state.me is again


def test_copy_copy_of_a_step_interface_is_a_type_error(virtual_tool):
    seen = []

    def step(as_):
        with pytest.raises(TypeError, match="root"):
            copy.copy(as_)
        seen.append("raised")

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    as_.run()
    assert seen == ["raised"]


def test_copy_from_a_deeply_nested_model(virtual_tool):
    # the copy recursed per nested parallel(): RecursionError half-way, and
    # the half-copied root ran without the model's last steps
    import sys

    depth = sys.getrecursionlimit() * 3
    model = AsyncSteps(virtual_tool)
    p = model
    for _ in range(depth):
        p = p.parallel()
    p.add(lambda as_: as_.state.update(deep="reached"))
    model.add(lambda as_: as_.success(as_.state.get("deep")))
    assert AsyncSteps(virtual_tool).copy_from(model).run() == "reached"


def test_copy_from_does_not_copy_special_state_or_error_handlers_lost(virtual_tool):
    model = AsyncSteps(virtual_tool)
    model.add(lambda as_: as_.error("ModelErr"), lambda as_, c: as_.success("handled " + c))
    model.state.x = 1
    as_ = AsyncSteps(virtual_tool).copy_from(model)
    assert as_.state.error_info == ""
    assert as_.run() == "handled ModelErr"


def test_copy_from_needs_a_root(virtual_tool):
    seen = {}

    def step(as_):
        try:
            AsyncSteps(virtual_tool).copy_from(as_)
        except TypeError as e:
            seen["err"] = str(e)

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    as_.run()
    assert "root" in seen["err"]


def test_new_instance_is_independent_root(virtual_tool):
    box = {}

    def step(as_):
        n = as_.new_instance()
        box["n"] = n
        box["n_id"] = n.root_id()
        box["my_id"] = as_.root_id()
        n.state.x = "own"
        n.add(lambda as_: as_.success("from new"))

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    as_.run()
    n = box["n"]
    assert isinstance(n, AsyncSteps) and bool(n)
    assert box["n_id"] != box["my_id"]
    assert "x" not in as_.state
    assert n.run() == "from new"


# ---- execute / cancel ----


def test_execute_reports_unhandled_error_to_callback(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("Bad", "info"))
    as_.execute(lambda as_, code: seen.append((code, as_.state.error_info)))
    assert seen == []  # execute() never runs steps inline
    virtual_tool.run()
    assert seen == [("Bad", "info")]


def test_execute_without_handler_reports_on_stderr(virtual_tool, capsys):
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.error("Unseen", "lost info"))
    as_.execute()
    virtual_tool.run()
    err = capsys.readouterr().err
    assert "Unseen" in err and "lost info" in err


def test_cancel_before_start_runs_nothing(virtual_tool):
    out = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: out.append("ran"))
    as_.execute(lambda as_, c: out.append(c))
    as_.cancel()
    virtual_tool.run()
    assert out == []


def test_cancel_stops_flow_mid_way(virtual_tool):
    out = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.set_timeout(1000), lambda as_, c: out.append(c))
    as_.add(lambda as_: out.append("second"))
    as_.execute(lambda as_, c: out.append(("unhandled", c)))
    virtual_tool.advance(100)
    virtual_tool.iterate()
    as_.cancel()
    virtual_tool.run()
    assert out == []
    assert virtual_tool.now() == 100  # the 1100 ms deadline never fired


# ---- binary / wrap ----


def test_binary_and_wrap_round_trip(virtual_tool):
    seen = {}

    def step(as_):
        b = as_.binary()
        w = wrap(b)
        seen["type"] = type(w)
        seen["same_ptr"] = w.binary() == b
        seen["root"] = w.root_id() == as_.root_id()
        seen["valid"] = bool(w)
        # the wrapped view controls the very same step
        w.add(lambda as_: as_.success("via wrap"))

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    as_.add(lambda as_, v: as_.success(v + "!"))
    assert as_.run() == "via wrap!"
    assert seen == {"type": AsyncSteps, "same_ptr": True, "root": True, "valid": True}


def test_wrap_controls_external_completion(virtual_tool):
    box = {}
    out = []

    def step(as_):
        as_.wait_external()
        box["addr"] = as_.binary()

    as_ = AsyncSteps(virtual_tool)
    as_.add(step)
    as_.add(lambda as_, v: out.append(v))
    as_.execute()
    virtual_tool.iterate()
    assert out == []
    wrap(box["addr"]).success("wrapped success")
    virtual_tool.run()
    assert out == ["wrapped success"]


def test_wrap_of_a_root_of_ours_takes_its_tool(virtual_tool):
    # the view had no tool: run() and new_instance().run() of it failed
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success("from a wrapped root"))
    w = wrap(as_.binary())
    assert w._tool is virtual_tool
    assert w.run() == "from a wrapped root"
    child = w.new_instance()
    child.add(lambda as_: as_.success("child"))
    assert child.run() == "child"


def test_root_binary_is_native_and_repr(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    addr = as_.binary()
    assert isinstance(addr, int) and addr != 0
    assert fp.is_native(addr) is True
    assert hex(addr)[2:] in repr(as_)
    assert isinstance(fp.ABI_VERSION, int) and fp.ABI_VERSION >= 1
    assert isinstance(fp.CORE_VERSION, str) and fp.CORE_VERSION


def test_default_tool_is_per_thread():
    tools = {}

    def other():
        tools["other"] = fp.get_tool()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert fp.get_tool() is fp.get_tool()
    assert tools["other"] is not fp.get_tool()
    assert AsyncSteps()._tool is fp.get_tool()


def test_copy_from_replays_sync_parallel_onerror_and_labels(virtual_tool):
    from futoin_polyglot import Mutex

    m = Mutex(tool=virtual_tool)
    log = []
    model = AsyncSteps(virtual_tool)
    model.sync(m, lambda as_: log.append("in mutex"))
    p = model.parallel(lambda as_, code: (log.append("parallel onerror " + code), as_.success()))
    p.add(lambda as_: as_.error("ParFail"))

    def outer(as_):
        as_.loop(lambda as_: as_.break_loop("MODEL_LOOP"))

    model.loop(lambda as_: as_.add(outer), "MODEL_LOOP")
    model.add(lambda as_: as_.success("model done"))

    for _ in range(2):
        log.clear()
        as_ = AsyncSteps(virtual_tool).copy_from(model)
        assert as_.run() == "model done"
        assert log == ["in mutex", "parallel onerror ParFail"]


def _make_step(nparams):
    ns = {}
    params = ", ".join(f"a{i}" for i in range(nparams))
    exec(f"def step(as_, {params}):\n    as_.success(({params},))", ns)  # noqa: S102
    return ns["step"]


@pytest.mark.parametrize("given, nparams", [(1, 20), (20, 25), (5, 16)])
def test_missing_required_values_are_none_for_many_params(virtual_tool, given, nparams):
    """JS-style leniency holds whatever the number of parameters."""
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(*range(given)))
    as_.add(_make_step(nparams))
    result = run_ok(as_)
    assert result == tuple(range(given)) + (None,) * (nparams - given)


def run_ok(as_):
    try:
        return as_.run()
    except FutoInError as e:
        pytest.fail(f"flow failed: {e.code}: {e.info}")


def test_timeout_of_outer_step_cancels_waiting_substep(virtual_tool):
    out = []

    def outer(as_):
        as_.set_timeout(100)

        def inner(as_):
            as_.set_cancel(lambda as_: out.append(("inner cancel", virtual_tool.now())))

        as_.add(inner)
        as_.add(lambda as_: out.append("inner second step (never)"))

    as_ = AsyncSteps(virtual_tool)
    as_.add(outer, lambda as_, code: (out.append(("outer onerror", code, virtual_tool.now())), as_.success()))
    as_.run()
    assert out == [("inner cancel", 100), ("outer onerror", "Timeout", 100)]


def test_nested_parallel_failure_cancels_everything(virtual_tool):
    out = []

    def branch1(as_):
        p2 = as_.parallel()
        p2.add(lambda as_: as_.set_cancel(lambda as_: out.append("nested waiting cancelled")))
        p2.add(lambda as_: as_.add(lambda as_: as_.set_timeout(50)))

    as_ = AsyncSteps(virtual_tool)
    p = as_.parallel()
    p.add(branch1)
    p.add(lambda as_: as_.add(lambda as_: as_.set_cancel(lambda as_: out.append("sibling cancelled"))))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "Timeout"
    assert virtual_tool.now() == 50
    assert sorted(out) == ["nested waiting cancelled", "sibling cancelled"]


def test_async_def_steps_are_refused_clearly(virtual_tool):
    """the engine never awaits a coroutine a step returns: an async def step
    is a TypeError at add(), a coroutine returned anyway fails the flow"""
    async def fetch(as_):
        as_.success("data")

    as_ = AsyncSteps(virtual_tool)
    with pytest.raises(TypeError, match="await_"):
        as_.add(fetch)
    as_.add(lambda as_: fetch(as_))  # returns a coroutine
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "TypeError" and "await_" in ei.value.info


@pytest.mark.parametrize("how", ["add", "loop", "repeat", "for_each", "sync", "sync onerror", "parallel add"])
def test_async_def_is_refused_at_the_call_by_every_method_taking_a_step(virtual_tool, how):
    async def body(as_, *args):
        pass

    as_ = AsyncSteps(virtual_tool)
    calls = {
        "add": lambda: as_.add(body),
        "loop": lambda: as_.loop(body),
        "repeat": lambda: as_.repeat(2, body),
        "for_each": lambda: as_.for_each([1], body),
        "sync": lambda: as_.sync(Mutex(), body),
        "sync onerror": lambda: as_.sync(Mutex(), lambda as_: None, body),
        "parallel add": lambda: as_.parallel().add(body),
    }
    with pytest.raises(TypeError, match="async def"):
        calls[how]()


def test_arity_of_partial_and_callable_objects(virtual_tool):
    # a step may take fewer parameters than the values it receives (README),
    # also through functools.partial and an object's __call__
    import functools

    got = []

    def three(tag, as_, a):
        got.append((tag, a))

    class Step:
        def __call__(self, as_, a, b):
            got.append(("obj", a, b))

    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(1, 2, 3))
    as_.add(functools.partial(three, "partial"))
    as_.add(lambda as_: as_.success(4, 5, 6))
    as_.add(Step())
    as_.run()
    assert got == [("partial", 1), ("obj", 4, 5)]


def test_a_subclass_with_a_constructor_of_its_own(virtual_tool):
    # the usual Python subclass: its own __init__ arguments, then
    # super().__init__(tool); __new__ refused the arguments it did not know
    class Request(AsyncSteps):
        def __init__(self, request, tool=None, *, trace=False):
            super().__init__(tool)
            self.request = request
            self.trace = trace

        def respond(self):
            return self.add(lambda as_: as_.success(self.request.upper()))

    r = Request("ping", virtual_tool, trace=True)
    assert (r.request, r.trace) == ("ping", True)
    assert r.respond().run() == "PING"
    r2 = Request(request="pong", tool=virtual_tool)
    assert r2.respond().run() == "PONG"

    class Plain(AsyncSteps):
        def __init__(self, tool=None):
            super().__init__(tool=tool)
            self.ok = True

    p = Plain(virtual_tool)
    assert p.ok and p.add(lambda as_: as_.success(1)).run() == 1
    # AsyncSteps itself still takes nothing but its tool
    with pytest.raises(TypeError):
        AsyncSteps(virtual_tool, 1)
    with pytest.raises(TypeError):
        AsyncSteps(bogus=1)
    # super().__init__() with another tool than the root was made on
    other = Tool(virtual_time=True)

    class Wrong(AsyncSteps):
        def __init__(self, tool=None):
            super().__init__(other)

    with pytest.raises(ValueError, match="tool"):
        Wrong(virtual_tool)
