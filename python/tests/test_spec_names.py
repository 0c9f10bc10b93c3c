"""The spec's own method names (FTN12 2.2, 1.10) next to the Pythonic ones:
code written from the spec runs unchanged."""

from __future__ import annotations

import pytest

from futoin_polyglot import AsyncSteps, errors

# spec name -> Python name
ALIASES = {
    "setTimeout": "set_timeout",
    "setCancel": "set_cancel",
    "waitExternal": "wait_external",
    "successStep": "success_step",
    "copyFrom": "copy_from",
    "newInstance": "new_instance",
    "forEach": "for_each",
    "loopForEach": "for_each",
    "makeLoop": "loop",
    "repeatLoop": "repeat",
    "breakLoop": "break_loop",
    "continueLoop": "continue_loop",
}


@pytest.mark.parametrize("spec, py", sorted(ALIASES.items()))
def test_spec_name_is_the_python_method(spec, py):
    assert getattr(AsyncSteps, spec) is getattr(AsyncSteps, py)


def test_state_is_callable_and_returns_itself(virtual_tool):
    seen = []

    def step(as_):
        st = as_.state()
        st["x"] = 1
        seen.append(st is as_.state)
        seen.append(as_.state.x)

    root = AsyncSteps(virtual_tool)
    root.add(step)
    root.run()
    assert seen == [True, 1]
    assert root.state() is root.state


def test_a_flow_written_with_the_spec_names(virtual_tool):
    out = []
    model = AsyncSteps(virtual_tool)
    model.add(lambda as_: out.append("model"))
    model.state()["from_model"] = True

    def waits(as_):
        as_.setCancel(lambda as_: out.append("cancelled"))
        as_.setTimeout(1000)
        as_.waitExternal()

    def timed_out(as_, code):
        out.append(code)
        as_.success()

    def body(as_, i):
        if i == 1:
            as_.continueLoop()
        if i == 3:
            as_.breakLoop()
        out.append(i)

    def loop_body(as_):
        out.append("loop")
        as_.breakLoop()

    def step(as_):
        as_.repeatLoop(5, body)
        as_.forEach(["a"], lambda as_, k, v: out.append((k, v)))
        as_.loopForEach({"k": "v"}, lambda as_, k, v: out.append((k, v)))
        as_.makeLoop(loop_body)
        as_.add(waits, timed_out)
        as_.successStep("done")

    root = AsyncSteps(virtual_tool)
    root.copyFrom(model)
    root.add(step)
    root.add(lambda as_, v: out.append(v))
    root.run()
    assert out == ["model", 0, 2, (0, "a"), ("k", "v"), "loop", "cancelled", errors.Timeout, "done"]
    assert root.state.from_model is True
    assert isinstance(root.newInstance(), AsyncSteps)
