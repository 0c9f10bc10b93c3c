"""The FutoIn C++ reference's own parallel and sync test cases
(tests/asyncsteps.test.cpp, tests/sync.test.cpp of its NitroSteps), with
its values. Its scheduler takes one step per flow or branch per turn, which
is ``Tool(burst=1)`` here; all in virtual time."""

from __future__ import annotations

import pytest

from futoin_polyglot import AsyncSteps, Limiter, Mutex, Throttle, Tool


@pytest.fixture
def tool():
    return Tool(virtual_time=True, burst=1)


def _log(v):
    return lambda as_, *args: as_.state["result"].append(v)


def _branches(p, n, iterations, fail_12=False):
    """n branches: 1, 2, 3 each with two sub-steps (11, 12 ...), then a
    repeat() branch logging 40 + i"""

    def branch(k):
        def step(as_):
            as_.state["result"].append(k)
            as_.add(_log(k * 10 + 1))
            if fail_12 and k == 1:
                def fail(as_):
                    as_.state["result"].append(12)
                    as_.error("MyError")

                as_.add(fail)
            else:
                as_.add(_log(k * 10 + 2))

        return step

    for k in range(1, n + 1):
        p.add(branch(k))
    p.repeat(iterations, lambda as_, i: as_.state["result"].append(40 + i))


def test_parallel_execute_outer(tool):
    r = AsyncSteps(tool)
    r.state["result"] = []
    _branches(r.parallel(), 3, 3)
    r.run()
    # a loop step runs its first iteration in its own turn
    assert r.state["result"] == [1, 2, 3, 40, 11, 21, 31, 41, 12, 22, 32, 42]


def test_parallel_execute_inner(tool):
    r = AsyncSteps(tool)
    r.state["result"] = []

    def outer(as_):
        as_.state["result"].append(0)
        _branches(as_.parallel(), 3, 3)

    r.add(outer)
    r.run()
    assert r.state["result"] == [0, 1, 2, 3, 40, 11, 21, 31, 41, 12, 22, 32, 42]


def test_parallel_error_outer(tool):
    r = AsyncSteps(tool)
    r.state["result"] = []

    def on_error(as_, code):
        as_.state["result"].append(0)
        if code == "MyError":
            as_.success()

    _branches(r.parallel(on_error), 2, 2, fail_12=True)
    r.add(_log("done"))
    r.run()
    assert r.state["result"] == [1, 2, 40, 11, 21, 41, 12, 0, "done"]


class _Count:
    def __init__(self):
        self.inside = 0
        self.max = 0


def _nested(count, sync):
    """sync(sync, sync(sync, critical section)): re-entry of the same flow"""

    def innermost(as_):
        count.max = max(count.max, count.inside)
        count.inside -= 1

    def body(as_):
        count.inside += 1
        as_.sync(sync, innermost)

    return lambda as_: as_.sync(sync, body)


def _rejected(log):
    def on_error(as_, code):
        log.append((code, as_.state.error_info))
        as_.success()

    return on_error


@pytest.mark.parametrize("make", [
    pytest.param(lambda tool: Mutex(1, 1, tool=tool), id="mutex"),
    pytest.param(lambda tool: Limiter(max_queue=1, rate=4, tool=tool), id="limiter"),
])
def test_queue_max_rejects_the_third_flow(tool, make):
    sync = make(tool)
    count = _Count()
    rejected = []
    roots = [AsyncSteps(tool) for _ in range(3)]
    roots[0].add(_nested(count, sync))
    roots[1].add(_nested(count, sync))
    roots[2].add(_nested(count, sync), _rejected(rejected))
    unhandled = []
    for r in roots:
        r.execute(lambda as_, code: unhandled.append(code))
    tool.run()
    assert rejected == [("DefenseRejected", "Mutex queue limit")]
    assert (count.max, count.inside, unhandled) == (1, 0, [])


@pytest.mark.parametrize("make", [
    pytest.param(lambda tool: Mutex(2, tool=tool), id="mutex"),
    pytest.param(lambda tool: Limiter(concurrent=2, max_queue=2, rate=4, burst=4, period_ms=150, tool=tool),
                 id="limiter"),
])
def test_two_flows_inside_at_most(tool, make):
    sync = make(tool)
    count = _Count()
    done = []
    unhandled = []
    for n in range(4):
        r = AsyncSteps(tool)
        r.add(_nested(count, sync))
        r.add(lambda as_, n=n: done.append(n))
        r.execute(lambda as_, code: unhandled.append(code))
    tool.run()
    assert (count.max, count.inside, sorted(done), unhandled) == (2, 0, [0, 1, 2, 3], [])


def test_throttle_lets_two_in_per_period(tool):
    thr = Throttle(2, 150, tool=tool)
    count = _Count()
    entered = []

    def step(as_):
        def body(as_):
            entered.append(tool.now())
            count.inside += 1
            count.max = max(count.max, count.inside)
            as_.add(lambda as_: setattr(count, "inside", count.inside - 1))

        as_.sync(thr, body)

    for _ in range(4):
        AsyncSteps(tool).add(step).execute()
    tool.run()
    assert (count.max, count.inside) == (2, 0)
    assert entered == [0, 0, 150, 150]


def test_throttle_queue_max_rejects_with_its_own_info(tool):
    thr = Throttle(1, 1000, 1, tool=tool)
    rejected = []
    entered = []
    for n in range(3):
        r = AsyncSteps(tool)
        r.add(lambda as_, n=n: as_.sync(thr, lambda as_: entered.append(n)), _rejected(rejected) if n == 2 else None)
        r.execute()
    tool.run()
    assert rejected == [("DefenseRejected", "Throttle queue limit")]
    assert entered == [0, 1]
