"""Loops: loop/break_loop/continue_loop with labels, repeat, for_each."""

from __future__ import annotations

import pytest

from futoin_polyglot import AsyncSteps, FutoInError, errors


def test_loop_until_break(virtual_tool):
    seen = []

    def body(as_):
        if len(seen) == 5:
            as_.break_loop()
        seen.append(len(seen))

    as_ = AsyncSteps(virtual_tool)
    assert as_.loop(body) is as_
    as_.add(lambda as_, *args: as_.success(list(seen), args))
    assert as_.run() == ([0, 1, 2, 3, 4], ())


def test_break_from_substep_of_loop_body(virtual_tool):
    seen = []

    def body(as_):
        as_.add(lambda as_: as_.success(len(seen)))

        def check(as_, n):
            if n == 3:
                as_.break_loop()
            seen.append(n)

        as_.add(check)

    as_ = AsyncSteps(virtual_tool)
    as_.loop(body)
    as_.run()
    assert seen == [0, 1, 2]


def test_continue_loop_skips_rest_of_iteration(virtual_tool):
    seen = []
    count = [0]

    def body(as_):
        count[0] += 1
        i = count[0]
        if i > 6:
            as_.break_loop()
        if i % 2:
            as_.continue_loop()
        as_.add(lambda as_: seen.append(i))

    as_ = AsyncSteps(virtual_tool)
    as_.loop(body)
    as_.run()
    assert seen == [2, 4, 6]


def test_break_outer_loop_by_label(virtual_tool):
    out = []

    def outer(as_):
        out.append("outer")

        def inner(as_):
            out.append("inner")
            if out.count("inner") == 3:
                as_.break_loop("OUTER")

        as_.loop(inner, "INNER")
        as_.add(lambda as_: out.append("after inner (unreachable)"))

    as_ = AsyncSteps(virtual_tool)
    as_.loop(outer, "OUTER")
    as_.add(lambda as_: out.append("done"))
    as_.run()
    assert out == ["outer", "inner", "inner", "inner", "done"]


def test_continue_outer_loop_by_label(virtual_tool):
    out = []

    def outer(as_):
        n = out.count("outer")
        out.append("outer")
        if n == 2:
            as_.break_loop()

        def inner(as_):
            out.append("inner")
            as_.continue_loop("OUTER")

        as_.loop(inner, "INNER")
        as_.add(lambda as_: out.append("after inner (unreachable)"))

    as_ = AsyncSteps(virtual_tool)
    as_.loop(outer, "OUTER")
    as_.run()
    assert out == ["outer", "inner", "outer", "inner", "outer"]


def test_break_inner_only_without_label(virtual_tool):
    out = []

    def outer(as_):
        n = out.count("outer")
        out.append("outer")
        if n == 2:
            as_.break_loop("OUTER")
        as_.loop(lambda as_: as_.break_loop(), "INNER")
        as_.add(lambda as_: out.append("after inner"))

    as_ = AsyncSteps(virtual_tool)
    as_.loop(outer, "OUTER")
    as_.run()
    assert out == ["outer", "after inner", "outer", "after inner", "outer"]


def test_unknown_label_unwinds_as_error(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.loop(lambda as_: as_.break_loop("NOPE"), "REAL"),
            lambda as_, c: seen.append((c, as_.state.error_info)))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == errors.LoopBreak
    assert seen == [("LoopBreak", "NOPE")]


def test_break_outside_loop_is_an_error(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.break_loop())
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "LoopBreak"


def test_break_and_continue_raise_immediately(virtual_tool):
    seen = []

    def body(as_):
        try:
            as_.break_loop()
        except FutoInError as e:
            seen.append((e.code, e.info))
            raise
        seen.append("not reached")

    as_ = AsyncSteps(virtual_tool)
    as_.loop(body, "L")
    as_.run()
    assert seen == [("LoopBreak", "")]


def test_error_in_loop_body_exits_loop_to_handler(virtual_tool):
    count = [0]

    def body(as_):
        count[0] += 1
        if count[0] == 4:
            raise ValueError("stop here")

    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.loop(body), lambda as_, c: as_.success(c, count[0]))
    assert as_.run() == ("ValueError", 4)


def test_loop_runs_many_iterations_in_constant_stack(virtual_tool):
    n = [0]

    def body(as_):
        n[0] += 1
        if n[0] == 100_000:
            as_.break_loop()

    as_ = AsyncSteps(virtual_tool)
    as_.loop(body)
    as_.run()
    assert n[0] == 100_000


def test_repeat_indices(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    assert as_.repeat(4, lambda as_, i: seen.append(i)) is as_
    as_.add(lambda as_, *a: seen.append(a))
    as_.run()
    assert seen == [0, 1, 2, 3, ()]


def test_repeat_zero_times(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.repeat(0, lambda as_, i: seen.append(i))
    as_.add(lambda as_: seen.append("after"))
    as_.run()
    assert seen == ["after"]


def test_repeat_with_substeps_and_break(virtual_tool):
    seen = []

    def body(as_, i):
        def sub(as_):
            if i == 3:
                as_.break_loop()
            seen.append(i)

        as_.add(sub)

    as_ = AsyncSteps(virtual_tool)
    as_.repeat(10, body)
    as_.run()
    assert seen == [0, 1, 2]


def test_repeat_continue_and_label(virtual_tool):
    seen = []

    def outer(as_, i):
        def inner(as_, j):
            if j == 1:
                as_.continue_loop("OUTER")
            seen.append((i, j))

        as_.repeat(3, inner, "INNER")

    as_ = AsyncSteps(virtual_tool)
    as_.repeat(2, outer, "OUTER")
    as_.run()
    assert seen == [(0, 0), (1, 0)]


def test_for_each_list(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    assert as_.for_each(["apple", "banana"], lambda as_, k, v: seen.append((k, v))) is as_
    as_.run()
    assert seen == [(0, "apple"), (1, "banana")]


def test_for_each_dict_in_order(virtual_tool):
    seen = []
    data = {"x": 1, "y": [2], 3: "z"}
    as_ = AsyncSteps(virtual_tool)
    as_.for_each(data, lambda as_, k, v: seen.append((k, v)))
    as_.run()
    assert seen == [("x", 1), ("y", [2]), (3, "z")]
    assert seen[1][1] is data["y"]


def test_for_each_generator_and_empty(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.for_each((c for c in "ab"), lambda as_, k, v: seen.append((k, v)))
    as_.for_each([], lambda as_, k, v: seen.append("never"))
    as_.run()
    assert seen == [(0, "a"), (1, "b")]


def test_for_each_reads_an_iterator_one_item_per_iteration(virtual_tool):
    # it took every item at the call: an endless one never returned (memory
    # ran out), and break_loop() could not stop a lazy one early
    import itertools

    trace = []

    def numbers():
        for i in itertools.count():
            trace.append(f"made {i}")
            yield i

    def body(as_, k, v):
        if v == 2:
            as_.break_loop()
        trace.append(f"body {k}:{v}")

    as_ = AsyncSteps(virtual_tool)
    as_.for_each(numbers(), body)
    as_.for_each(itertools.count(10), lambda as_, k, v: as_.break_loop() if v == 11 else trace.append(v))
    as_.run()
    assert trace == ["made 0", "body 0:0", "made 1", "body 1:1", "made 2", 10]


def test_for_each_iterator_that_fails_fails_the_flow(virtual_tool):
    def broken():
        yield "a"
        raise KeyError("lost")

    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.for_each(broken(), lambda as_, k, v: seen.append(v))
    as_.add(lambda as_: seen.append("never"))
    with pytest.raises(FutoInError) as exc:
        as_.run()
    assert seen == ["a"]
    assert isinstance(as_.state.last_exception, KeyError)


def test_for_each_break_with_label(virtual_tool):
    seen = []

    def outer(as_, k, v):
        def inner(as_, k2, v2):
            if v == "b" and v2 == 2:
                as_.break_loop("FE")
            seen.append((v, v2))

        as_.for_each([1, 2, 3], inner)

    as_ = AsyncSteps(virtual_tool)
    as_.for_each(["a", "b", "c"], outer, "FE")
    as_.run()
    assert seen == [("a", 1), ("a", 2), ("a", 3), ("b", 1)]


def test_spec_aliases(virtual_tool):
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.loop_for_each({"k": "v"}, lambda as_, k, v: seen.append(k + v))
    as_.repeat_loop(2, lambda as_, i: seen.append(i))
    as_.make_loop(lambda as_: as_.break_loop())
    as_.run()
    assert seen == ["kv", 0, 1]


def test_loop_in_copied_model_runs_again(virtual_tool):
    count = [0]
    model = AsyncSteps(virtual_tool)

    def body(as_):
        count[0] += 1
        if count[0] % 3 == 0:
            as_.break_loop()

    model.loop(body, "M")
    a = AsyncSteps(virtual_tool).copy_from(model)
    b = AsyncSteps(virtual_tool).copy_from(model)
    a.run()
    b.run()
    assert count[0] == 6


def test_break_and_continue_take_the_label_by_keyword(virtual_tool):
    # README writes as_.break_loop(label=None); the C methods took no keywords
    n = []

    def body(as_):
        n.append(1)
        if len(n) == 1:
            as_.continue_loop(label="L")
        as_.break_loop(label="L")

    root = AsyncSteps(virtual_tool)
    root.loop(body, "L")
    root.run()
    assert len(n) == 2


def test_annotation_aliases_exist_at_run_time():
    from futoin_polyglot import CancelFunc, ErrorFunc, StepFunc

    assert StepFunc and ErrorFunc and CancelFunc
