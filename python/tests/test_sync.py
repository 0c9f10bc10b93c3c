"""Synchronisation: Mutex, Throttle, Limiter and Python ISync subclasses,
all in virtual time."""

from __future__ import annotations

import pytest

from futoin_polyglot import AsyncSteps, FutoInError, ISync, Limiter, Mutex, Throttle, errors


def hold(as_, ms):
    """Stay inside the current step for ``ms`` of (virtual) time."""
    as_.add(lambda as_: as_.set_timeout(ms), lambda as_, code: as_.success())


def start_flows(tool, n, sync, log, hold_ms=0):
    for i in range(n):
        as_ = AsyncSteps(tool)

        def crit(as_, i=i):
            log.append(("in", i, tool.now()))
            if hold_ms:
                hold(as_, hold_ms)
            as_.add(lambda as_: log.append(("out", i, tool.now())))

        as_.sync(sync, crit)
        as_.execute(lambda as_, code, i=i: log.append(("error", i, code, as_.state.error_info)))


def test_mutex_serialises_flows(virtual_tool):
    log = []
    m = Mutex(tool=virtual_tool)
    start_flows(virtual_tool, 3, m, log, hold_ms=100)
    virtual_tool.run()
    assert log == [
        ("in", 0, 0), ("out", 0, 100),
        ("in", 1, 100), ("out", 1, 200),
        ("in", 2, 200), ("out", 2, 300),
    ]


def test_mutex_max_two(virtual_tool):
    log = []
    m = Mutex(2, tool=virtual_tool)
    start_flows(virtual_tool, 4, m, log, hold_ms=100)
    virtual_tool.run()
    entries = sorted((i, t) for kind, i, t in log if kind == "in")
    assert entries == [(0, 0), (1, 0), (2, 100), (3, 100)]


def test_mutex_max_queue_rejects(virtual_tool):
    log = []
    m = Mutex(1, max_queue=1, tool=virtual_tool)
    start_flows(virtual_tool, 3, m, log, hold_ms=10)
    virtual_tool.run()
    assert ("error", 2, errors.DefenseRejected, "Mutex queue limit") in log
    assert [x for x in log if x[0] == "in"] == [("in", 0, 0), ("in", 1, 10)]


def test_mutex_max_queue_zero(virtual_tool):
    log = []
    m = Mutex(1, max_queue=0, tool=virtual_tool)
    start_flows(virtual_tool, 2, m, log, hold_ms=10)
    virtual_tool.run()
    assert log == [("in", 0, 0), ("error", 1, "DefenseRejected", "Mutex queue limit"), ("out", 0, 10)]


def test_mutex_released_on_error(virtual_tool):
    m = Mutex(tool=virtual_tool)
    a = AsyncSteps(virtual_tool)
    a.sync(m, lambda as_: as_.error("InCritical"))
    b = AsyncSteps(virtual_tool)
    b.sync(m, lambda as_: as_.success("b entered"))
    seen = []
    a.execute(lambda as_, code: seen.append(code))
    assert b.run() == "b entered"
    assert seen == ["InCritical"]


def test_mutex_released_on_cancel(virtual_tool):
    m = Mutex(tool=virtual_tool)
    a = AsyncSteps(virtual_tool)
    a.sync(m, lambda as_: as_.wait_external())
    a.execute()
    virtual_tool.iterate()
    seen = []
    b = AsyncSteps(virtual_tool)
    b.sync(m, lambda as_: as_.success("b entered", virtual_tool.now()))
    b.add(lambda as_, *v: seen.append(v))
    b.execute()
    virtual_tool.advance(50)
    virtual_tool.iterate()
    assert seen == []  # b waits for a
    a.cancel()
    c = AsyncSteps(virtual_tool)
    c.sync(m, lambda as_: as_.success("c entered"))
    assert c.run() == "c entered"
    assert seen == [("b entered", 50)]


def test_mutex_is_reentrant_for_same_flow(virtual_tool):
    m = Mutex(tool=virtual_tool)
    as_ = AsyncSteps(virtual_tool)
    as_.sync(m, lambda as_: as_.sync(m, lambda as_: as_.success("inner")))
    assert as_.run() == "inner"


def test_mutex_treats_parallel_branches_as_separate_flows(virtual_tool):
    m = Mutex(tool=virtual_tool)
    log = []
    as_ = AsyncSteps(virtual_tool)
    p = as_.parallel()
    for i in range(2):
        def crit(as_, i=i):
            log.append((i, virtual_tool.now()))
            hold(as_, 10)

        p.add(lambda as_, crit=crit: as_.sync(m, crit))
    as_.run()
    assert log == [(0, 0), (1, 10)]


def test_sync_forwards_values_in_and_out(virtual_tool):
    m = Mutex(tool=virtual_tool)
    as_ = AsyncSteps(virtual_tool)
    as_.success_step(5, "x")
    assert as_.sync(m, lambda as_, v, s: as_.success(v + 1, s * 2)) is as_
    as_.add(lambda as_, a, b: as_.success((a, b)))
    assert as_.run() == (6, "xx")


def test_sync_onerror_handles_critical_section_error(virtual_tool):
    m = Mutex(tool=virtual_tool)
    as_ = AsyncSteps(virtual_tool)
    as_.sync(m, lambda as_: as_.error("Crit"), lambda as_, code: as_.success("handled " + code))
    as_.sync(m, lambda as_, v: as_.success(v + ", re-entered"))
    assert as_.run() == "handled Crit, re-entered"


def test_isync_sync_method(virtual_tool):
    m = Mutex(tool=virtual_tool)
    as_ = AsyncSteps(virtual_tool)
    assert m.sync(as_, lambda as_: as_.success("via obj.sync")) is as_
    assert as_.run() == "via obj.sync"


def test_throttle_entry_times(virtual_tool):
    log = []
    th = Throttle(2, 100, tool=virtual_tool)
    start_flows(virtual_tool, 5, th, log)
    virtual_tool.run()
    assert [(i, t) for kind, i, t in log if kind == "in"] == [
        (0, 0), (1, 0), (2, 100), (3, 100), (4, 200),
    ]


def test_throttle_max_queue_rejects(virtual_tool):
    log = []
    th = Throttle(1, 100, max_queue=1, tool=virtual_tool)
    start_flows(virtual_tool, 3, th, log)
    virtual_tool.run()
    assert ("error", 2, "DefenseRejected", "Throttle queue limit") in log
    assert [(i, t) for kind, i, t, *_ in log if kind == "in"] == [(0, 0), (1, 100)]


LIMITER_OPTIONS = {"concurrent": 1, "max_queue": 5, "rate": 2, "period_ms": 1000, "burst": 5}


@pytest.mark.parametrize("make", [
    lambda tool: Limiter(**LIMITER_OPTIONS, tool=tool),
    lambda tool: Limiter(LIMITER_OPTIONS, tool=tool),  # the spec's c-tor(options)
], ids=["keywords", "options mapping"])
def test_limiter_concurrency_and_rate(virtual_tool, make):
    log = []
    lim = make(virtual_tool)
    start_flows(virtual_tool, 4, lim, log, hold_ms=10)
    virtual_tool.run()
    assert [(i, t) for kind, i, t, *_ in log if kind == "in"] == [(0, 0), (1, 10), (2, 1000), (3, 1010)]


def test_limiter_rejects_beyond_queue(virtual_tool):
    log = []
    lim = Limiter(concurrent=1, max_queue=0, rate=10, tool=virtual_tool)
    start_flows(virtual_tool, 3, lim, log, hold_ms=10)
    virtual_tool.run()
    errs = [x for x in log if x[0] == "error"]
    assert [x[1:3] for x in errs] == [(1, "DefenseRejected"), (2, "DefenseRejected")]
    assert [x for x in log if x[0] == "in"] == [("in", 0, 0)]


@pytest.mark.parametrize("make, text", [
    (lambda: Limiter({"concurent": 2}), "concurent"),
    (lambda: Limiter({"rate": 2}, 3), "options"),
    (lambda: Limiter({"rate": "x"}), "rate"),
])
def test_limiter_options_mapping_misuse_is_a_type_error(make, text):
    with pytest.raises(TypeError, match=text):
        make()


def test_limiter_defaults(virtual_tool):
    log = []
    lim = Limiter(tool=virtual_tool)  # concurrent=1, max_queue=0, rate=1/s, burst=0
    start_flows(virtual_tool, 2, lim, log)
    virtual_tool.run()
    assert log[0] == ("in", 0, 0)
    assert [x[:3] for x in log if x[0] == "error"] == [("error", 1, "DefenseRejected")]


# ---- Python ISync implementations ----


class QueueLock(ISync):
    """A one-at-a-time lock written in Python: waiting via wait_external()
    and a later success() from unlock()."""

    def __init__(self, tool):
        self._tool = tool
        self.owner = None
        self.waiters = []
        self.calls = []

    def lock(self, as_):
        self.calls.append(("lock", as_.root_id()))
        if self.owner is None:
            self.owner = as_.root_id()
            return
        as_.wait_external()
        self.waiters.append(as_)

    def unlock(self, as_):
        self.calls.append(("unlock", as_.root_id()))
        assert self.owner == as_.root_id()
        if self.waiters:
            nxt = self.waiters.pop(0)
            self.owner = nxt.root_id()
            nxt.success()
        else:
            self.owner = None


def test_python_isync_serialises_with_waiting(virtual_tool):
    lock = QueueLock(virtual_tool)
    log = []
    start_flows(virtual_tool, 3, lock, log, hold_ms=10)
    virtual_tool.run()
    assert [x for x in log if x[0] == "in"] == [("in", 0, 0), ("in", 1, 10), ("in", 2, 20)]
    assert [c for c, _ in lock.calls] == ["lock"] * 3 + ["unlock"] * 3
    assert lock.owner is None and lock.waiters == []


def test_python_isync_forwards_values(virtual_tool):
    lock = QueueLock(virtual_tool)
    as_ = AsyncSteps(virtual_tool)
    as_.success_step(1, 2)
    as_.sync(lock, lambda as_, a, b: as_.success(a + b))
    as_.add(lambda as_, s: as_.success(s * 10))
    assert as_.run() == 30


class CountingSync(ISync):
    def __init__(self):
        self.locks = 0
        self.unlocks = 0

    def lock(self, as_):
        self.locks += 1

    def unlock(self, as_):
        self.unlocks += 1


def test_isync_unlock_once_on_success(virtual_tool):
    s = CountingSync()
    as_ = AsyncSteps(virtual_tool)
    as_.sync(s, lambda as_: as_.add(lambda as_: as_.success("ok")))
    assert as_.run() == "ok"
    assert (s.locks, s.unlocks) == (1, 1)


def test_isync_unlock_once_on_error(virtual_tool):
    s = CountingSync()
    as_ = AsyncSteps(virtual_tool)

    def crit(as_):
        as_.add(lambda as_: as_.error("Inside"))

    as_.sync(s, crit)
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert ei.value.code == "Inside"
    assert (s.locks, s.unlocks) == (1, 1)


def test_isync_unlock_once_on_cancel(virtual_tool):
    s = CountingSync()
    as_ = AsyncSteps(virtual_tool)
    as_.sync(s, lambda as_: as_.wait_external())
    as_.execute()
    virtual_tool.iterate()
    assert (s.locks, s.unlocks) == (1, 0)
    as_.cancel()
    virtual_tool.run()
    assert (s.locks, s.unlocks) == (1, 1)


def test_isync_unlock_once_on_timeout(virtual_tool):
    s = CountingSync()
    as_ = AsyncSteps(virtual_tool)
    as_.sync(s, lambda as_: as_.set_timeout(100), lambda as_, code: as_.success(code))
    assert as_.run() == "Timeout"
    assert (s.locks, s.unlocks) == (1, 1)


def test_isync_lock_rejection(virtual_tool):
    class Reject(ISync):
        def __init__(self):
            self.unlocks = 0

        def lock(self, as_):
            as_.error(errors.DefenseRejected, "custom limit")

        def unlock(self, as_):
            self.unlocks += 1

    r = Reject()
    entered = []
    as_ = AsyncSteps(virtual_tool)
    as_.sync(r, lambda as_: entered.append(True))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert (ei.value.code, ei.value.info) == ("DefenseRejected", "custom limit")
    assert entered == [] and r.unlocks == 0


def test_isync_lock_raising_python_exception(virtual_tool):
    class Broken(ISync):
        def lock(self, as_):
            raise RuntimeError("lock broke")

    as_ = AsyncSteps(virtual_tool)
    as_.sync(Broken(), lambda as_: as_.success("entered"))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert (ei.value.code, ei.value.info) == ("RuntimeError", "lock broke")


def test_duck_typed_sync_object(virtual_tool):
    class Duck:
        def __init__(self):
            self.log = []

        def lock(self, as_):
            self.log.append("lock")

        def unlock(self, as_):
            self.log.append("unlock")

    d = Duck()
    as_ = AsyncSteps(virtual_tool)
    as_.sync(d, lambda as_: d.log.append("crit"))
    as_.run()
    assert d.log == ["lock", "crit", "unlock"]


def test_a_sync_object_keeps_its_tool_alive_until_it_goes():
    # freeing a Throttle stops its period timer on its tool: the tool must
    # still be there, whatever order the garbage goes in
    import subprocess
    import sys
    code = """
import gc
from futoin_polyglot import AsyncSteps, Throttle, Tool
tool = Tool(virtual_time=True)
th = Throttle(1, 10, tool=tool)
AsyncSteps(tool).sync(th, lambda as_: None).execute()
tool.iterate(0)  # entered: the period timer runs
th._tool = None
del tool
gc.collect()
del th
gc.collect()
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], env=dict(__import__("os").environ, PYTHONMALLOC="debug"),
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout.strip()) == (0, "ok"), r.stderr


# ---- the adapter an ISync gets (fuzzing found these) ----


class NamedSync(ISync):
    def __init__(self, name, calls):
        self.name = name
        self.calls = calls

    def lock(self, as_):
        self.calls.append(self.name)


def test_isync_copy_is_an_isync_of_its_own(virtual_tool):
    import copy
    import gc

    calls = []
    a = NamedSync("a", calls)
    AsyncSteps(virtual_tool).sync(a, lambda as_: as_.success()).run()
    b = copy.copy(a)  # its __dict__ too
    b.name = "b"
    AsyncSteps(virtual_tool).sync(b, lambda as_: as_.success()).run()
    del a
    gc.collect()
    AsyncSteps(virtual_tool).sync(b, lambda as_: as_.success()).run()  # crashed: the adapter of a freed `a`
    assert calls == ["a", "b", "b"]


def test_a_used_isync_deep_copies_and_pickles_and_the_copy_works(virtual_tool):
    import copy
    import pickle

    calls = []
    a = NamedSync("a", calls)
    AsyncSteps(virtual_tool).sync(a, lambda as_: as_.success()).run()
    b = copy.deepcopy(a)  # failed: cannot pickle 'PyCapsule' object
    b.calls = calls
    b.name = "b"
    c = pickle.loads(pickle.dumps(a))
    c.calls = calls
    c.name = "c"
    for obj in (b, c, a):
        AsyncSteps(virtual_tool).sync(obj, lambda as_: as_.success()).run()
    assert calls == ["a", "b", "c", "a"]


def test_isync_attributes_of_its_own_named_sync_are_left_alone(virtual_tool):
    import datetime
    import threading

    calls = []

    class OwnLock(NamedSync):
        def __init__(self):
            super().__init__("own", calls)
            self._sync = threading.Lock()  # the class's own business

    class Capsule(NamedSync):
        _sync = datetime.datetime_CAPI  # a capsule this package did not make

    for obj in (OwnLock(), Capsule("capsule", calls)):
        AsyncSteps(virtual_tool).sync(obj, lambda as_: as_.success()).run()
    assert calls == ["own", "capsule"]


def test_isync_frozen_or_without_dict(virtual_tool):
    import dataclasses

    calls = []

    @dataclasses.dataclass(frozen=True)
    class Frozen(ISync):
        name: str

        def lock(self, as_):
            calls.append(self.name)

    class Slots:  # duck-typed ISync: no __dict__ at all
        __slots__ = ()

        def lock(self, as_):
            calls.append("slots")

        def unlock(self, as_):
            pass

    for obj in (Frozen("frozen"), Slots()):
        for _ in range(2):
            AsyncSteps(virtual_tool).sync(obj, lambda as_: as_.success()).run()
    assert calls == ["frozen", "frozen", "slots", "slots"]
    from futoin_polyglot import sync_address

    assert sync_address(Frozen("x")) != 0
    with pytest.raises(TypeError, match="attribute"):
        sync_address(Slots())  # nowhere to keep an adapter that C may use for as long as it lives


def test_isync_adapter_attribute_dropped_while_locked(virtual_tool):
    import gc

    calls = []

    class Waits(ISync):
        def lock(self, as_):
            calls.append("lock")
            self.waiting = as_
            as_.wait_external()

        def unlock(self, as_):
            calls.append("unlock")

    obj = Waits()
    root = AsyncSteps(virtual_tool)
    root.sync(obj, lambda as_: as_.success("in"))
    root.execute()
    virtual_tool.iterate()
    del obj.__dict__["_futoin_isync_adapter"]  # the FutoInSync C holds went with it
    gc.collect()
    obj.waiting.success()
    virtual_tool.run()
    assert calls == ["lock", "unlock"]


def test_isync_that_implements_the_spec_sync_method_is_called(virtual_tool):
    # spec 1.11.3: ISync is sync(as, execute_callback[, error_callback]);
    # as_.sync(obj, f) calls obj.sync(as_, f, onerror), as the JS reference
    log = []

    class Wrapping(ISync):
        def sync(self, as_, func, onerror=None):
            log.append("sync")
            as_.add(lambda as_: log.append("before"))
            as_.add(func, onerror)
            as_.add(lambda as_: log.append("after"))

    class Duck:
        def sync(self, as_, func, onerror=None):
            log.append("duck")
            as_.add(func, onerror)

    as_ = AsyncSteps(virtual_tool)
    as_.sync(Wrapping(), lambda as_: log.append("inside"))
    as_.sync(Duck(), lambda as_: log.append("duck inside"))
    as_.run()
    assert log == ["sync", "duck", "before", "inside", "after", "duck inside"]


@pytest.mark.parametrize("forward", [
    lambda obj, as_, func, onerror: super(type(obj), obj).sync(as_, func, onerror),
    lambda obj, as_, func, onerror: as_.sync(obj, func, onerror),  # the old base's pattern: no endless recursion
], ids=["super().sync", "as_.sync(self)"])
def test_isync_sync_that_forwards_locks_once(virtual_tool, forward):
    log = []

    class Locking(ISync):
        def lock(self, as_):
            log.append("lock")

        def unlock(self, as_):
            log.append("unlock")

        def sync(self, as_, func, onerror=None):
            log.append("sync")
            return forward(self, as_, func, onerror)

    as_ = AsyncSteps(virtual_tool)
    as_.sync(Locking(), lambda as_: log.append("inside"))
    as_.run()
    assert log == ["sync", "lock", "inside", "unlock"]


@pytest.mark.parametrize("make", [
    lambda: Mutex(0), lambda: Throttle(0), lambda: Limiter(concurrent=0), lambda: Limiter(rate=0),
], ids=["Mutex(0)", "Throttle(0)", "Limiter(concurrent=0)", "Limiter(rate=0)"])
def test_zero_capacity_is_a_value_error(make):
    # it was silently taken as 1
    with pytest.raises(ValueError):
        make()
