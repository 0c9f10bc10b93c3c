"""Roots are released once their flow ends and nobody holds them (a root's
own completion steps must not keep it alive through C memory)."""

import asyncio
import gc
import weakref

from futoin_polyglot import AsyncSteps, FutoInError, Tool


def test_awaited_roots_are_freed():
    refs = []

    async def main():
        for i in range(50):
            root = AsyncSteps().add(lambda as_, i=i: as_.success(i))
            refs.append(weakref.ref(root))
            assert await root == i
            del root

    asyncio.run(main())
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_blocking_run_root_is_freed(virtual_tool):
    root = AsyncSteps(virtual_tool).add(lambda as_: as_.success("x"))
    ref = weakref.ref(root)
    assert root.run() == "x"
    del root
    gc.collect()
    assert ref() is None


def test_failed_flow_root_is_freed(virtual_tool):
    seen = []
    root = AsyncSteps(virtual_tool).add(lambda as_: as_.error("Boom"))
    ref = weakref.ref(root)
    root.execute(lambda as_, code: seen.append(code))
    virtual_tool.run()
    del root
    gc.collect()
    assert seen == ["Boom"]
    assert ref() is None


def test_running_root_stays_alive_without_user_reference(virtual_tool):
    out = []
    root = AsyncSteps(virtual_tool)
    root.add(lambda as_: as_.set_timeout(1000), lambda as_, code: out.append(code))
    root.execute(lambda as_, code: None)
    del root  # the flow is still waiting for its timeout
    gc.collect()
    virtual_tool.run()
    assert out == ["Timeout"]


def _live_roots():
    import gc
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, AsyncSteps))


def test_failed_flows_awaited_in_a_tight_loop_are_freed(arun):
    # the step's exception keeps a traceback whose frames hold the root;
    # the GC must see the cycle through the root's C state
    import asyncio

    async def main():
        before = _live_roots()
        for _ in range(500):
            try:
                await AsyncSteps().add(lambda as_: as_.error("NotFound", "no such item"))
            except FutoInError:
                pass
        await asyncio.sleep(0)
        return _live_roots() - before

    assert arun(main()) <= 2


def test_roots_in_their_own_closures_or_state_are_collected(arun):
    async def main():
        before = _live_roots()
        for _ in range(300):
            r = AsyncSteps()
            r.state.owner = r
            r.add(lambda as_, r=r: as_.success(r is not None))
            await r
            c = AsyncSteps()
            c.add(lambda as_: as_.success(c is not None))
            await c
        del r, c
        return _live_roots() - before

    assert arun(main()) <= 2


def test_roots_held_by_their_parallel_branches_are_collected():
    # a branch's callback is kept in the parallel step's memory, which the
    # GC did not see: a root its branches refer to was never collected
    tool = Tool(virtual_time=True)

    def build(run):
        r = AsyncSteps(tool)
        p = r.parallel()
        p.add(lambda as_: r.state)
        p.add(lambda as_: as_.success(r is not None))
        if run:
            r.run()
        return weakref.ref(r)

    refs = [build(i % 2 == 0) for i in range(100)]
    gc.collect()
    assert sum(w() is not None for w in refs) == 0


def test_reused_root_drops_the_steps_of_finished_runs(virtual_tool):
    # a root re-used for add() + run() cycles keeps nothing of runs long over
    root = AsyncSteps(virtual_tool)
    refs = []
    out = []
    for i in range(20):

        class Step:
            def __call__(self, as_, i=i):
                out.append(i)

        step = Step()
        refs.append(weakref.ref(step))
        root.add(step)
        del step
        root.run()
    gc.collect()
    assert out == list(range(20))
    assert len([r for r in refs if r() is not None]) <= 2  # the last run's may be on the stack
    del root
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_reused_root_retried_from_its_unhandled_callback(virtual_tool):
    # the failed run's callbacks stay while its unhandled-error callback runs
    root = AsyncSteps(virtual_tool)
    out = []

    def fail(as_):
        as_.error("Boom")

    def unhandled(as_, code):
        out.append(code)
        if out.count("Boom") < 5:
            root.add(fail)
            root.execute(unhandled)
        out.append("back")

    root.add(fail)
    root.execute(unhandled)
    virtual_tool.run()
    assert out == ["Boom", "back"] * 5


def test_copy_from_an_executed_root_copies_no_steps(virtual_tool):
    # as futoin-asyncsteps: execute() takes the queued steps; state is copied
    log = []
    model = AsyncSteps(virtual_tool)
    model.state.k = "v"
    model.add(lambda as_: log.append("model step"))
    model.run()
    copy = AsyncSteps(virtual_tool).copy_from(model)
    copy.add(lambda as_: log.append("own step"))
    copy.run()
    assert log == ["model step", "own step"]
    assert copy.state.k == "v"


def test_root_with_an_await_of_a_coroutine_referring_to_it_is_freed(virtual_tool):
    # the unstarted coroutine was kept in a module dict: coroutine -> root
    # was never collected
    import warnings

    refs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # never executed: truly never awaited
        for _ in range(20):
            root = AsyncSteps(virtual_tool)

            async def work(root=root):
                return root

            root.await_(work())
            refs.append(weakref.ref(root))
            del root, work
        gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_reused_root_keeps_no_memory_per_run(virtual_tool):
    # every run() left a root-level frame of its hidden steps (and of each
    # plain function added) in the root's memory until the root went:
    # about 0.5 KiB per run
    import resource

    def step(as_):
        pass

    root = AsyncSteps(virtual_tool)

    def cycles(n):
        for _ in range(n):
            root.add(step)
            root.run()

    cycles(5000)  # warm: pools and arenas at their size
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cycles(40000)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 4096, f"{grown_kib} KiB more after 40000 runs of one root"


def test_root_referred_to_by_its_step_functions_globals_is_freed(virtual_tool):
    # a step function made in a namespace of its own (exec, FunctionType)
    # whose globals hold the root: the GC did not see through it
    refs = []
    for _ in range(10):
        ns = {}
        exec("def step(as_):\n    return ROOT\n", ns)
        root = AsyncSteps(virtual_tool)
        ns["ROOT"] = root
        root.add(ns["step"])
        step_doc = ns["step"]
        root.add(lambda as_: None)
        refs.append(weakref.ref(root))
        del root, ns, step_doc
    gc.collect()
    assert [r for r in refs if r() is not None] == []


# ---- abandoned flows: waiting for an event nothing can bring any more ----


def _waiting_step(log, keep=None):
    def step(as_):
        as_.set_cancel(lambda a: log.append("cancelled"))
        if keep is not None:
            keep.append(as_)
        as_.wait_external()

    return step


def _abandon(make, tool):
    """the weak reference to a root make() made, once its flow waits and a
    full collection ran with nobody holding the root"""
    root = make()
    root.execute()
    tool.run()
    ref = weakref.ref(root)
    del root
    gc.collect()
    return ref


async def _promise_abandoned(make, started=None):
    """the promise of a root make() made, and a weak reference to that root
    once its flow waits (after `started`, if given) and a full collection
    ran with nobody holding the root"""
    root = make()
    fut = root.promise()
    if started is not None:
        await started
    ref = weakref.ref(root)
    del root
    gc.collect()
    return fut, ref


def test_an_abandoned_waiting_flow_goes_with_its_root_and_its_cancel_handlers_run(virtual_tool):
    # as an asyncio task waiting on a lost future is collected: nothing
    # holds the root or a step of it, no timer or sync object moves it
    log = []
    ref = _abandon(lambda: AsyncSteps(virtual_tool).add(_waiting_step(log)).add(lambda as_: log.append("next")),
                   virtual_tool)
    assert ref() is None
    assert log == ["cancelled"]


def test_a_waiting_flow_whose_step_somebody_holds_goes_on(virtual_tool):
    log, keep = [], []
    ref = _abandon(lambda: AsyncSteps(virtual_tool).add(_waiting_step(log, keep)).add(lambda as_: log.append("next")),
                   virtual_tool)
    assert ref() is not None
    keep.pop().success()
    virtual_tool.run()
    assert log == ["next"]
    gc.collect()
    assert ref() is None


def test_a_waiting_flow_with_a_timer_or_a_held_root_is_kept(virtual_tool):
    log = []
    timed = AsyncSteps(virtual_tool)
    timed.add(lambda as_: as_.set_timeout(1000), lambda as_, code: log.append(code))
    timed.execute(lambda as_, code: None)
    held = AsyncSteps(virtual_tool).add(_waiting_step(log))
    held.execute()
    virtual_tool.iterate()
    ref = weakref.ref(timed)
    del timed
    gc.collect()
    assert ref() is not None
    assert log == []
    held.cancel()
    virtual_tool.run()
    assert log == ["cancelled", "Timeout"]


def test_an_abandoned_flow_in_a_cycle_through_its_steps_goes_too(virtual_tool):
    # the step's as_ kept in the root's own state, the root in a closure of
    # a step still queued: only the collector can tell nobody else holds them
    log = []

    def make():
        root = AsyncSteps(virtual_tool)

        def step(as_):
            as_.state["me"] = as_
            as_.set_cancel(lambda a: log.append("cancelled"))
            as_.wait_external()

        return root.add(step).add(lambda as_: log.append(root))

    ref = _abandon(make, virtual_tool)
    assert ref() is None
    assert log == ["cancelled"]


def test_an_abandoned_flow_held_only_by_its_own_sub_steps_goes_too(virtual_tool):
    # the root is held by a sub-step's callable and a cancel handler, both in
    # step memory that only the flow's walk shows the collector
    log = []

    def make():
        root = AsyncSteps(virtual_tool)
        holder = [root]

        def outer(as_):
            r = holder.pop()

            def inner(as2):
                as2.set_cancel(lambda a: log.append(r is not None))
                as2.wait_external()

            as_.add(inner)

        return root.add(outer)

    ref = _abandon(make, virtual_tool)
    assert ref() is None
    assert log == [True]


def test_parallel_branches_of_an_abandoned_flow_are_cancelled_with_it(virtual_tool):
    log = []

    def make():
        root = AsyncSteps(virtual_tool)
        root.parallel().add(_waiting_step(log)).add(_waiting_step(log))
        return root

    ref = _abandon(make, virtual_tool)
    assert ref() is None
    assert log == ["cancelled", "cancelled"]


def test_a_flow_whose_binary_pointer_was_handed_out_is_kept(virtual_tool):
    log = []

    def make():
        root = AsyncSteps(virtual_tool).add(_waiting_step(log))
        root.binary()  # C code may complete its step: only it knows
        return root

    ref = _abandon(make, virtual_tool)
    assert ref() is not None
    ref().cancel()
    assert log == ["cancelled"]


def test_a_flow_whose_waiting_step_handed_its_binary_pointer_out_is_kept(virtual_tool):
    # the step's as_ is not kept: the pointer C holds is all there is
    log, pointers = [], []

    def step(as_):
        as_.set_cancel(lambda a: log.append("cancelled"))
        pointers.append(as_.binary())
        as_.wait_external()

    ref = _abandon(lambda: AsyncSteps(virtual_tool).add(step), virtual_tool)
    assert ref() is not None
    ref().cancel()
    assert log == ["cancelled"]


def test_a_flow_waiting_inside_a_mutex_is_kept(virtual_tool):
    # the Mutex is held for it: the engine, not only its steps, knows of it
    from futoin_polyglot import Mutex

    log = []
    ref = _abandon(lambda: AsyncSteps(virtual_tool).sync(Mutex(), _waiting_step(log)), virtual_tool)
    assert ref() is not None
    ref().cancel()
    assert log == ["cancelled"]


def test_an_abandoned_flow_under_asyncio_goes_and_its_promise_is_cancelled(arun):
    async def main():
        log = []
        ran = asyncio.get_running_loop().create_future()

        def step(as_):
            as_.set_cancel(lambda a: log.append("cancelled"))
            as_.wait_external()
            ran.set_result(None)

        fut, ref = await _promise_abandoned(lambda: AsyncSteps().add(step), ran)
        assert ref() is None
        assert log == ["cancelled"]
        try:
            await fut
        except asyncio.CancelledError:
            return "cancelled"
        return "not cancelled"

    assert arun(main()) == "cancelled"


def test_a_flow_awaiting_a_future_somebody_holds_is_kept(arun):
    async def main():
        pending = asyncio.get_running_loop().create_future()
        # its first step runs in promise(): it waits for pending
        fut, ref = await _promise_abandoned(
            lambda: AsyncSteps().add(lambda as_: as_.await_(pending)).add(lambda as_, v: as_.success(v + 1)))
        assert ref() is not None
        pending.set_result(41)
        return await fut

    assert arun(main()) == 42


def test_a_collection_on_another_thread_leaves_a_flow_to_its_tools_thread():
    import threading

    log, refs = [], []
    idle, collected = threading.Event(), threading.Event()

    def worker():
        tool = Tool(virtual_time=True)
        root = AsyncSteps(tool).add(_waiting_step(log))
        root.execute()
        tool.run()
        refs.append(weakref.ref(root))
        del root
        idle.set()
        collected.wait()
        gc.collect()  # on the thread of its tool: it goes

    t = threading.Thread(target=worker)
    t.start()
    idle.wait()
    gc.collect()  # not the thread of its tool: it stays
    kept = refs[0]() is not None
    collected.set()
    t.join()
    assert kept
    assert refs[0]() is None
    assert log == ["cancelled"]


def test_a_flow_awaiting_a_lost_future_goes_as_the_task_awaiting_it_goes(arun):
    async def main():
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, ctx: None)  # asyncio's "Task was destroyed but it is pending!"
        log = []

        started = loop.create_future()

        async def waits_forever():
            started.set_result(None)
            await loop.create_future()  # nobody else has it

        def step(as_):
            as_.set_cancel(lambda a: log.append("cancelled"))
            as_.await_(waits_forever())

        fut, ref = await _promise_abandoned(lambda: AsyncSteps().add(step), started)
        return ref() is None, log, fut.cancelled()

    assert arun(main()) == (True, ["cancelled"], True)


def test_an_abandoned_flow_of_a_subclass_with_its_own_del_is_kept(virtual_tool):
    # its __del__ runs first when it goes, before the flow could end: the
    # collector must not take what the flow still calls
    log = []

    class Logged(AsyncSteps):
        __slots__ = ()

        def __del__(self):
            log.append("del")

    def make():
        root = Logged(virtual_tool)
        root.add(_waiting_step(log))
        root.state["me"] = root  # a cycle: only the collector could take it
        return root

    ref = _abandon(make, virtual_tool)
    assert ref() is not None
    assert log == []
    ref().cancel()
    assert log == ["cancelled"]
