"""FutoIn FTN12 AsyncSteps with the engine in C.

Flows run on the running asyncio loop (no extra thread), or with a blocking
``run()`` without asyncio. C and Python steps mix in one flow through the
FTN12 universal binary interface (``binary()`` / ``wrap()`` / ``CStep``).
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
import copy
import gc
import os
import sys
import threading
import typing
import weakref

from . import errors
from ._futoin import ABI_VERSION, CORE_VERSION, AsyncStepsBase, CStep, Handle, Tool
from ._futoin import _setup, is_native, sync_address
from ._futoin import limiter_new as _limiter_new
from ._futoin import mutex_new as _mutex_new
from ._futoin import release_step_handle as _release_step_handle
from ._futoin import step_handle as _step_handle
from ._futoin import throttle_new as _throttle_new
from ._futoin import wrap as _wrap
from .errors import FutoInError

__all__ = [
    "AsyncSteps", "AsyncTool", "CStep", "FutoInError", "Handle", "ISync", "Limiter", "Mutex", "State",
    "StepHandle", "Throttle", "Tool", "errors", "get_tool", "is_native", "run", "wrap",
    "ABI_VERSION", "CORE_VERSION", "StepFunc", "ErrorFunc", "CancelFunc", "sync_address",
]

_SPECIAL_STATE = ("error_info", "last_exception", "async_stack")
_running: "dict[int, AsyncSteps]" = {}  # roots whose flows are executing, by id
_promised: "dict[int, asyncio.Future]" = {}  # their promise() futures, by root id
_in_run: "dict[int, dict]" = {}  # roots in a blocking run(), by id: its outcome box
_aside: "dict[int, weakref.ref]" = {}  # idle roots _running holds weakly during a full collection


def _running_pop(key: int) -> "AsyncSteps | None":
    """the root whose flow ended, no longer running"""
    root = _running.pop(key, None)
    if root is None and _aside:
        ref = _aside.pop(key, None)
        root = ref() if ref is not None else None
    return root


def _gc_callback(phase: str, info: dict) -> None:
    """A flow that only a call on one of its steps can move on, whose root
    and steps nobody else holds, goes with a full collection as an asyncio
    task waiting on a lost future goes (its cancel handlers run, its
    promise() is cancelled): meanwhile _running holds idle roots weakly and
    the collector sees what their flows hold (AsyncStepsBase._gc_aside)."""
    if info.get("generation") != 2:
        return
    if phase == "start":
        if _running:
            # a copy: another thread may start a flow meanwhile
            idle = [(key, root) for key, root in list(_running.items()) if root._gc_aside()]
            for key, root in idle:
                _aside[key] = weakref.ref(root)
                _running.pop(key, None)
            # here the roots nobody else held go (each cancelled first)
    elif _aside:
        for key, ref in list(_aside.items()):
            root = ref()
            if root is not None:
                root._gc_back()
                _running[key] = root
        _aside.clear()


gc.callbacks.append(_gc_callback)


class State(dict):
    """Per-root state: a dict that also allows attribute access.

    ``error_info`` (str), ``last_exception`` and ``async_stack`` are kept by
    the engine: it sets ``error_info`` and ``last_exception`` at each error
    (a read of ``as_.state`` shows them), and what code writes there stays
    until the next error. ``async_stack``
    lists the Python step functions that failed and the error handlers
    called in the current run (the last 256 at most).
    """

    __slots__ = ()

    def __call__(self):
        """The spec's ``state()``: this same object."""
        return self

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None


# ---- tools and host loops ----

_tls = threading.local()
_drivers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncioDriver]" = weakref.WeakKeyDictionary()


class _AsyncioDriver:
    """Drives a Tool from an asyncio loop: one call_soon per batch of ready
    steps, call_later for the next timer, an eventfd reader for wake-ups
    from other threads. Never one loop callback per step."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.thread = threading.current_thread()  # the loop's
        # asyncio's loops tell the thread running them (_thread_id): a check
        # without the getpid() of _get_running_loop() (CPython 3.11)
        self.tells_thread = isinstance(loop, asyncio.BaseEventLoop)
        self.tool = Tool()
        self._soon = None
        self._timer = None
        self._fd = self.tool.set_hooks(self._arm)
        loop.add_reader(self._fd, self._on_wakeup)

    def _arm(self, delay: int) -> None:
        if self.loop.is_closed():
            return  # a timer stopped after asyncio.run() ended: nothing to arm
        if delay == 0:
            if self._soon is None:
                self._soon = self.loop.call_soon(self._drive)
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if delay > 0:
            self._timer = self.loop.call_later(delay / 1000.0, self._drive)

    def _drive(self) -> None:
        self._soon = None
        self._arm(self.tool.iterate(0))

    def _on_wakeup(self) -> None:
        self.tool.drain_wakeups()
        self._drive()

    def close(self) -> None:
        """the loop closed: let go of it, the hooks (they hold this driver
        from the tool, a cycle the GC cannot see) and the eventfd"""
        for handle in (self._soon, self._timer):
            if handle is not None:
                handle.cancel()
        self._soon = self._timer = None
        try:
            self.loop.remove_reader(self._fd)
        except Exception:  # the loop is closed already
            pass
        self.tool.set_hooks(None)


_last_driver = None  # the most recently used one: most programs have one loop
_get_running_loop = asyncio.events._get_running_loop  # None instead of raising
_get_ident = threading.get_ident


def _running_loop():
    """the loop running on this thread, or None; the loop of the driver used
    last answers without the getpid() of _get_running_loop()"""
    d = _last_driver
    if d is not None and d.tells_thread and d.loop._thread_id == _get_ident():
        return d.loop
    return _get_running_loop()


def _forget_loops() -> None:
    """a forked child runs none of its parent's loops (a copy says it runs)"""
    global _last_driver
    _last_driver = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loops)


_closed_drivers: "list[_AsyncioDriver]" = []  # of closed loops, with flows left that wait for their thread


def _drop_closed_drivers() -> None:
    """drivers of loops closed since (each asyncio.run() is a new loop)"""
    global _last_driver
    for loop, driver in list(_drivers.items()):
        if loop.is_closed():
            del _drivers[loop]
            driver.close()
            _closed_drivers.append(driver)
            if _last_driver is driver:
                _last_driver = None
    # their flows still waiting go as asyncio.run() cancels its tasks: their
    # cancel handlers run, their roots are let go; on the loop's thread, or
    # here once that thread ended (a thread pool's asyncio.run(): it never
    # starts a loop again)
    me = threading.current_thread()
    kept = []
    for driver in _closed_drivers:
        roots = [root for root in _running.values() if root._tool is driver.tool]
        if roots and driver.thread is not me:
            if driver.thread.is_alive():
                kept.append(driver)
                continue
            driver.tool.bind_thread()  # nobody else runs it any more
        for root in roots:
            root.cancel()
    _closed_drivers[:] = kept


def _driver_for(loop: asyncio.AbstractEventLoop) -> _AsyncioDriver:
    global _last_driver
    driver = _last_driver
    if driver is not None and driver.loop is loop:
        return driver
    driver = _drivers.get(loop)
    if driver is None:
        _drop_closed_drivers()
        driver = _drivers[loop] = _AsyncioDriver(loop)
    _last_driver = driver
    return driver


def get_tool() -> Tool:
    """The tool for new flows: the running asyncio loop's, else this
    thread's blocking tool."""
    loop = _running_loop()
    if loop is not None:
        return _driver_for(loop).tool
    tool = getattr(_tls, "tool", None)
    if tool is None:
        tool = _tls.tool = Tool()
    return tool


AsyncTool = Tool


def run(tool: "Tool | None" = None) -> None:
    """Blocking run of a tool (default: this thread's) until no step, timer
    or reference is left. Releases the GIL while waiting; Ctrl-C raises
    KeyboardInterrupt."""
    if tool is not None and not isinstance(tool, Tool):
        raise TypeError(f"run() takes a Tool or None, not {type(tool).__name__}")
    (tool or get_tool()).run()


# ---- AsyncSteps ----

# the callables the API takes, for type annotations (see __init__.pyi)
StepFunc = typing.Callable[..., typing.Any]  # func(as_, *received_values)
ErrorFunc = typing.Callable[["AsyncSteps", str], typing.Any]  # onerror(as_, code)
CancelFunc = typing.Callable[["AsyncSteps"], typing.Any]  # cancel(as_)


def _check_callable(func, what="step function"):
    if not callable(func) or isinstance(func, AsyncStepsBase):  # calling an AsyncSteps is success()
        raise TypeError(f"{what} must be callable, not {type(func).__name__}")
    if asyncio.iscoroutinefunction(func):
        raise TypeError(f"{what} is an async def: steps are plain functions and the engine never awaits; "
                        "call as_.await_(coro) in the step instead")


class _IterBody:
    """for_each() over an iterator: the loop body that takes its next item
    (its end breaks the loop; what it raises fails the step)"""

    __slots__ = ("it", "func", "label", "k")

    def __init__(self, it, func, label):
        self.it = it
        self.func = func
        self.label = label
        self.k = 0

    def __call__(self, as_):
        for v in self.it:
            k = self.k
            self.k = k + 1
            return self.func(as_, k, v)
        as_.break_loop(self.label)


def _tool_of_args(cls, tool, args, kwargs):
    """The tool among the arguments of a subclass's constructor of its own
    (``tool=``, else the first Tool passed), None when none is; AsyncSteps
    itself takes nothing else."""
    if cls.__init__ is AsyncStepsBase.__init__:
        if isinstance(tool, Tool) and not args and not kwargs:
            return tool  # (a subclass of Tool)
        raise TypeError(f"{cls.__name__}() takes one optional argument, tool (a Tool); "
                        "a subclass with other arguments defines __init__")
    kw = kwargs.get("tool")
    if isinstance(kw, Tool):
        return kw
    for a in (tool, *args):
        if isinstance(a, Tool):
            return a
    return None


class AsyncSteps(AsyncStepsBase):
    """An FTN12 AsyncSteps object.

    ``AsyncSteps()`` makes a root on the current tool (see ``get_tool``);
    step callbacks receive views over their own step, of this class (not
    of a subclass: as the JS library's step interfaces, they are not the
    root). A subclass may define ``__init__`` with arguments of its own and
    call ``super().__init__(tool)``; the root is made on its ``tool=``
    argument, else on the first Tool it is given, else on the current one.
    """

    __slots__ = ()

    # spec 2.2.2: where the language has a call operator, it is success()
    __call__ = AsyncStepsBase.success

    def __new__(cls, tool: "Tool | None" = None, *args, **kwargs):
        if args or kwargs or (tool is not None and type(tool) is not Tool):
            tool = _tool_of_args(cls, tool, args, kwargs)
        if tool is None:
            # the common case inline: the loop used last (see _driver_for)
            loop = _running_loop()
            d = _last_driver
            tool = d.tool if loop is not None and d is not None and d.loop is loop else get_tool()
            return AsyncStepsBase.__new__(cls, tool, True)  # picked: it may move to where it runs
        return AsyncStepsBase.__new__(cls, tool)

    # -- execution: a running root stays alive until its flow ends --

    def execute(self, unhandled_error=None) -> None:
        """Schedule the root (spec 2.2.3). ``unhandled_error(as_, code)`` gets
        an error no handler took; without it the error is reported on stderr.
        The root is kept alive until the flow ends."""
        if unhandled_error is not None:
            _check_callable(unhandled_error, "unhandled_error")
        if not self._is_root:
            AsyncStepsBase.execute(self, unhandled_error)  # the engine's InternalError, in the flow
            return
        key = id(self)
        if _running.get(key) is self:
            AsyncStepsBase.execute(self, unhandled_error)  # engine reports InternalError
            return
        # the closures hold only the key: the root's own steps live in its
        # memory, so referring to the root from there would keep it forever
        _running[key] = self

        def finished(as_, *args):
            _flow_ended(_running_pop(key))

        def unhandled(as_, code):
            _flow_ended(_running_pop(key))
            if unhandled_error is not None:
                unhandled_error(as_, code)
            else:
                sys.stderr.write(f"futoin_polyglot: unhandled error {code}: {as_.state['error_info']}\n")

        self._add_hidden(finished)
        AsyncStepsBase.execute(self, unhandled)

    def cancel(self) -> None:
        """Cancel the root's flow (spec 2.2.3); safe from any thread (it is
        then done on the loop thread). Its promise() future, if any, is
        cancelled too; a blocking run() raises CancelledError."""
        if not self.is_same_thread():
            self._cancel_on_loop()
            return
        AsyncStepsBase.cancel(self)
        _flow_cancelled(self)  # the engine told already, unless another provider's root

    # -- Python-level parts of the API --

    def success_step(self, *args) -> "AsyncSteps":
        """Shortcut for ``add(lambda as_: as_.success(*args))`` (spec 1.12)."""
        return self.add(lambda as_: as_.success(*args))

    def for_each(self, items, func, label=None) -> "AsyncSteps":
        """``func(as_, key, value)`` for each item of a list (index keys) or
        mapping (spec: forEach; loopForEach)."""
        _check_callable(func, "forEach body")
        if isinstance(items, collections.abc.Mapping):
            keys = list(items.keys())
            values = [items[k] for k in keys]
        elif isinstance(items, collections.abc.Sized):
            values = list(items)
            keys = range(len(values))
        else:
            # an iterator or generator, maybe endless: an item per iteration
            return self.loop(_IterBody(iter(items), func, label), label)
        return self.repeat(len(keys), lambda as_, i: func(as_, keys[i], values[i]), label)

    loop_for_each = for_each
    make_loop = AsyncStepsBase.loop
    repeat_loop = AsyncStepsBase.repeat

    def sync(self, obj, func, onerror=None) -> "AsyncSteps":
        """``func`` as a step under ``obj`` (a Mutex, Throttle, Limiter or any
        ISync; spec 2.2.1): ``obj.sync(as_, func, onerror)`` when ``obj``
        has its own ``sync()`` (the spec's ISync), else its ``lock()`` /
        ``unlock()``."""
        own = getattr(type(obj), "sync", None)
        key = (id(self), id(obj))
        if own is None or own is ISync.sync or key in _in_sync:
            # (an obj.sync() calling as_.sync(obj) again: its lock() / unlock())
            return _sync_locked(self, obj, func, onerror)
        _check_callable(func)
        if onerror is not None:
            _check_callable(onerror, "onerror")
        _in_sync.add(key)
        try:
            obj.sync(self, func, onerror)
        finally:
            _in_sync.discard(key)
        return self

    def await_(self, awaitable, onerror=None) -> "AsyncSteps":
        """Wait for a coroutine or future as a step (spec 1.13). Its result
        is the step's result; a rejection becomes ``PromiseReject`` (or the
        FutoInError it carries); cancelling the flow cancels it."""
        if not (asyncio.isfuture(awaitable) or asyncio.iscoroutine(awaitable)
                or hasattr(awaitable, "__await__")):
            raise TypeError(f"await_() needs an awaitable, not {type(awaitable).__name__}")

        self._note_await()  # a root's: closed when its flow ends
        return self.add(_AwaitStep(awaitable), onerror)

    def copy_from(self, other: "AsyncSteps") -> "AsyncSteps":
        """Copy the steps recorded on root ``other`` and its state entries not
        present here (spec 1.5)."""
        model = getattr(other, "_model", None)
        if model is None:
            raise TypeError("copy_from() needs a root AsyncSteps (a model)")
        _replay(self, model)
        mine = self.state
        for k, v in other.state.items():
            if k not in mine and k not in _SPECIAL_STATE:
                mine[k] = v
        return self

    def __copy__(self) -> "AsyncSteps":
        """``copy.copy()``: the spec's clone of a model root (1.5), a new
        root on the same tool with its steps and state entries (copy_from())."""
        if not self._is_root:
            raise TypeError("copy.copy() needs a root AsyncSteps (a model), not the interface of a step")
        return self.new_instance().copy_from(self)

    def __deepcopy__(self, memo) -> "AsyncSteps":
        """``copy.deepcopy()``: as ``copy.copy()``, its state values deep-copied."""
        clone = self.__copy__()
        memo[id(self)] = clone  # a state value that refers to the root: to the clone
        state = clone.state
        for k, v in state.items():
            if k not in _SPECIAL_STATE:
                state[k] = copy.deepcopy(v, memo)
        return clone

    # -- asyncio --

    def promise(self) -> "asyncio.Future":
        """Execute on the running asyncio loop; the future gets the last
        step's result (None, one value, or a tuple) or a FutoInError. As in
        the JS reference, the flow's first burst of steps runs right away
        (unless called from inside another flow's step)."""
        if not self._is_root:
            _check_root(self, "promise()")
        loop = _running_loop()
        if loop is None:
            raise RuntimeError("promise() needs a running asyncio loop; use run() without one")
        d = _last_driver
        tool = d.tool if d is not None and d.loop is loop else _driver_for(loop).tool
        key = id(self)
        if tool is not self._tool:
            if _running.get(key) is self:
                raise RuntimeError("this flow runs on another tool than the running loop's")
            # made before this loop ran (at module level, in an earlier
            # asyncio.run()): it runs here, as a coroutine made there would
            # (a Tool given to AsyncSteps() stays its tool: RuntimeError)
            _replay(self, self._rebind(tool))
        fut = loop.create_future()
        if _running.get(key) is self:
            # the future has the error: no report of the engine on stderr too
            fut.set_exception(FutoInError(errors.InternalError, "execute() called twice"))
            return fut
        _running[key] = self  # closures hold the key only (see execute)

        def capture(as_, *args):
            root = _running_pop(key)
            if root is not None:
                root._flow_ended()
            _promised.pop(key, None)
            if not fut.done():
                fut.set_result(None if not args else args[0] if len(args) == 1 else args)

        def unhandled(as_, code):
            _flow_ended(_running_pop(key))
            _promised.pop(key, None)
            if not fut.done():
                st = as_.state
                exc = st["last_exception"]
                fut.set_exception(FutoInError(code, st["error_info"], exc))
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    fut.exception()  # it leaves the loop itself: no "never retrieved" report

        self._add_hidden(capture)
        AsyncStepsBase.execute(self, unhandled)
        # like the JS reference's execute(): the first burst runs now, so a
        # flow that needs no I/O is already done and `await` does not yield
        self._execute_burst()
        if not fut.done():
            # still running: cancel() of the root cancels the future, and
            # cancelling the awaiter the flow (a flow done in its first
            # burst needs neither, nor a done-callback that a loop awaiting
            # many such flows without yielding would pile up)
            if _running.get(key) is not self:
                fut.cancel()  # cancelled inside its first burst
                return fut
            _promised[key] = fut

            def awaiter_gone(f):
                # the awaiting task was cancelled (task.cancel(), wait_for(),
                # a TaskGroup): the flow goes too, as an asyncio Task would
                if f.cancelled() and _running.get(key) is not None:
                    _running[key].cancel()

            fut.add_done_callback(awaiter_gone)
        return fut

    def __await__(self):
        return self.promise().__await__()

    # -- without asyncio --

    def run(self):
        """Execute and run this flow's tool until the flow ends (blocking).
        Returns the result like promise() or raises FutoInError. While the
        flow waits for a completion that nothing on this thread can bring,
        it waits for another Python thread holding a step view (``as_``) of
        it to bring it."""
        _check_root(self, "run()")
        tool = self._tool
        if (self._picked_tool and tool is not get_tool() and _running.get(id(self)) is not self
                and _running_loop() is None):
            # made in a loop that does not run now: it runs here, blocking
            _replay(self, self._rebind(get_tool()))
        self._tool._check_runnable()  # nested, or under asyncio: it would never return
        box = {}

        def capture(as_, *args):
            box["result"] = None if not args else args[0] if len(args) == 1 else args

        def unhandled(as_, code):
            st = as_.state
            box["error"] = FutoInError(code, st["error_info"], st["last_exception"])

        self._add_hidden(capture)
        key = id(self)
        _in_run[key] = box
        try:
            self.execute(unhandled)
            self._tool._run_flow(box, _other_threads)
        finally:
            _in_run.pop(key, None)
        if "error" in box:
            raise box["error"]
        if box.get("cancelled"):
            raise concurrent.futures.CancelledError("the flow was cancelled")
        if "result" not in box:
            if _running.get(key) is self:
                self.cancel()  # its cancel handlers run; the root takes a new run
            raise FutoInError(errors.InternalError,
                              "the flow did not complete: it waits for an external event, nothing is "
                              "scheduled and no other Python thread holds a step of it (C code "
                              "completing it from a thread of its own: hold tool.ref() meanwhile)")
        return box["result"]

    # the spec's names (FTN12 2.2; 1.10 for the ones a keyword clashes with)
    setTimeout = AsyncStepsBase.set_timeout
    setCancel = AsyncStepsBase.set_cancel
    waitExternal = AsyncStepsBase.wait_external
    successStep = success_step
    copyFrom = copy_from
    newInstance = AsyncStepsBase.new_instance
    forEach = loopForEach = for_each
    makeLoop = make_loop
    repeatLoop = repeat_loop
    breakLoop = AsyncStepsBase.break_loop
    continueLoop = AsyncStepsBase.continue_loop

    def __repr__(self):
        try:
            return f"<AsyncSteps at 0x{self._address:x}>" if self._tool is not None else "<AsyncSteps>"
        except RuntimeError:  # its step ended: logging and tracebacks still show it
            return "<AsyncSteps (ended)>"


def _check_root(as_, what):
    if not as_._is_root:
        raise TypeError(f"{what} needs a root AsyncSteps, not the interface of a step or parallel branch")


def _await_step(as_, awaitable):
    loop = _running_loop()
    if loop is None:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        as_.error(errors.InternalError, "await_() needs a flow driven by a running asyncio loop")
    # a future of another loop would never wake this one: ValueError, in the flow
    fut = asyncio.ensure_future(awaitable, loop=loop)
    cancelled = []

    def done(f):
        if cancelled:
            return
        if f.cancelled():
            as_._fail(errors.PromiseReject, "cancelled", asyncio.CancelledError())
            return
        exc = f.exception()
        if exc is None:
            result = f.result()
            if result is None:
                as_.success()
            else:
                as_.success(result)
        elif isinstance(exc, FutoInError):
            as_._fail(exc.code, exc.info, exc)
        else:
            as_._fail(errors.PromiseReject, str(exc), exc)

    def cancel(_as):
        cancelled.append(True)
        if not fut.get_loop().is_closed():  # a flow left behind by asyncio.run()
            fut.cancel()

    as_.set_cancel(cancel)
    fut.add_done_callback(done)


class _AwaitStep:
    """await_()'s step. A coroutine whose step never ran is closed, as a task
    cancelled before it started, instead of warning "never awaited": when
    its root's flow ends (the step of a root), else when the step goes."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable):
        self.awaitable = awaitable

    def __call__(self, as_, *_values):  # the values received are dropped
        aw = self.awaitable
        if asyncio.iscoroutine(aw):
            self.awaitable = None  # the task has it now
        elif aw is None:  # a copied model's step again
            as_.error(errors.InternalError, "await_(): this coroutine was awaited already")
        _await_step(as_, aw)

    def _flow_ended(self):
        aw = self.awaitable
        if asyncio.iscoroutine(aw):
            self.awaitable = None
            aw.close()

    __del__ = _flow_ended


def _replay(target, model):
    # the model is flat: each record's kind, then its arguments; a
    # parallel's branches are a model of their own, copied in turn (a stack,
    # not recursion: models nest as deep as parallel() calls did)
    todo = [(target, list(model), 0)]  # list(): copy_from() of itself copies the steps it had
    while todo:
        target, model, i = todo.pop()
        while i < len(model):
            kind = model[i]
            if kind == "add":
                target.add(model[i + 1], model[i + 2])
                i += 3
            elif kind == "loop":
                target.loop(model[i + 1], model[i + 2])
                i += 3
            elif kind == "repeat":
                target.repeat(model[i + 1], model[i + 2], model[i + 3])
                i += 4
            elif kind == "sync":
                target.sync(model[i + 1], model[i + 2], model[i + 3])
                i += 4
            elif kind == "parallel":
                todo.append((target, model, i + 3))  # the rest of this model after its branches
                todo.append((target.parallel(model[i + 1]), list(model[i + 2]), 0))
                break
            else:
                raise RuntimeError(f"copy_from(): unknown record {kind!r} in the model")


def _flow_ended(root) -> None:
    """Its flow ended: await_() steps of it that never ran close their
    coroutines (they never run now)."""
    if root is not None:
        root._flow_ended()


def _other_threads() -> bool:
    """Whether a Python thread other than this one runs (one that may
    complete a waiting step); threads C code made are not counted."""
    me = threading.current_thread()
    return any(t is not me and not isinstance(t, threading._DummyThread) and t.is_alive()
               for t in threading.enumerate())


def _flow_cancelled(root) -> None:
    """The engine cancelled a running flow of ``root``, whoever asked (this
    cancel(), C code, a wrap()ped view): its promise() future is cancelled,
    a blocking run() raises CancelledError. Called again: nothing left."""
    key = id(root)
    if _running.get(key) is root or _aside.pop(key, None) is not None:
        _running.pop(key, None)
        root._flow_ended()
        box = _in_run.get(key)
        if box is not None:
            box["cancelled"] = True
        fut = _promised.pop(key, None)
        if fut is not None and not fut.done() and not fut.get_loop().is_closed():
            fut.cancel()


_setup(FutoInError, State, AsyncSteps, _flow_cancelled, _AwaitStep)


def wrap(pointer, tool=None) -> AsyncSteps:
    """Adopt a ``FutoInAsyncSteps*`` (int address or capsule) from any FTN12
    provider. The view is valid while that step or root is."""
    return _wrap(pointer, tool)


class StepHandle:
    """A Python step for C code that calls ``api->add`` itself:
    ``execute_callback`` and ``data`` are addresses to pass along. Keep the
    handle alive until the step ran; ``close()`` releases it."""

    def __init__(self, func, tool=None):
        self._owner = None  # close() from __del__ after a refused func
        _check_callable(func)
        self.execute_callback, self.data, self._owner = _step_handle(func, tool)

    def close(self):
        if self._owner is not None:
            _release_step_handle(self._owner)
            self._owner = None

    def __del__(self):
        self.close()

    def __copy__(self):
        raise TypeError("a StepHandle cannot be copied: C code holds its one address")

    def __deepcopy__(self, memo):
        self.__copy__()

    def __reduce__(self):
        self.__copy__()


# ---- synchronization ----

def _check_count(name, value, allow_none=False, minimum=0):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum or value > 0xFFFFFFFF:
        raise ValueError(f"{name} must be between {minimum} and 4294967295")


class ISync:
    """Base of sync objects (spec 2.2.1 sync / 1.11). Subclasses implement
    ``lock(as_)``: return = acquired; ``as_.wait_external()`` and a later
    ``as_.success()`` = acquired after waiting; ``as_.error()`` = rejected.
    ``unlock(as_)`` runs once the protected step ends, however it ends.
    Works in any flow, also flows driven from C."""

    def lock(self, as_):
        raise NotImplementedError

    def unlock(self, as_):
        pass

    def sync(self, as_, func, onerror=None):
        """The spec's ISync call: ``func`` as a step of ``as_`` between
        ``lock()`` and ``unlock()``; a subclass may wrap it."""
        return _sync_locked(as_, self, func, onerror)


_in_sync = set()  # (as_, obj) ids whose obj.sync() runs now


def _sync_locked(as_, obj, func, onerror):
    if isinstance(obj, _CoreSync):
        obj._use_on(as_._tool)
    return AsyncStepsBase.sync(as_, obj, func, onerror)


class _CoreSync(ISync):
    """A sync object of the C core. It belongs to one tool (its timers run
    there): ``tool=``, else the running loop's, else the tool of the first
    flow that uses it, as an asyncio.Lock made before any loop runs."""

    def __init__(self, tool, make):
        self._make = make  # tool -> the core object
        self._tool = None
        self._core = None
        if tool is not None or _running_loop() is not None:
            self._bind(tool if tool is not None else get_tool())

    def _bind(self, tool):
        self._core = self._make(tool)
        self._tool = tool

    def _use_on(self, tool):
        """before a flow of `tool` takes it"""
        if self._core is None:
            self._bind(tool if tool is not None else get_tool())
        elif tool is not None and tool is not self._tool:
            raise RuntimeError(f"this {type(self).__name__} belongs to another tool (event loop) than this "
                               "flow's: create it where it is used, or pass tool=")

    @property
    def _sync(self):
        if self._core is None:
            self._bind(get_tool())
        return self._core


class Mutex(_CoreSync):
    """At most ``max`` flows inside; re-entrant per flow; ``max_queue``
    waiting flows (None: unlimited), beyond that DefenseRejected."""

    def __init__(self, max: int = 1, max_queue=None, tool=None):
        _check_count("max", max, minimum=1)
        _check_count("max_queue", max_queue, True)
        super().__init__(tool, lambda t: _mutex_new(t, max, max_queue))


class Throttle(_CoreSync):
    """At most ``max`` entries per ``period_ms``."""

    def __init__(self, max: int, period_ms: int = 1000, max_queue=None, tool=None):
        _check_count("max", max, minimum=1)
        _check_count("period_ms", period_ms)
        _check_count("max_queue", max_queue, True)
        super().__init__(tool, lambda t: _throttle_new(t, max, period_ms, max_queue))


_LIMITER_OPTIONS = ("concurrent", "max_queue", "rate", "period_ms", "burst")


class Limiter(_CoreSync):
    """Concurrency and rate limits in one (spec 2.5); the options as keyword
    arguments, or as the spec's ``c-tor(options)``: one mapping of them."""

    def __init__(self, concurrent: int = 1, max_queue: int = 0, rate: int = 1, period_ms: int = 1000,
                 burst: int = 0, tool=None):
        if isinstance(concurrent, collections.abc.Mapping):
            if (max_queue, rate, period_ms, burst) != (0, 1, 1000, 0):
                raise TypeError("Limiter(options): the options go in the mapping alone")
            unknown = sorted(str(k) for k in concurrent if k not in _LIMITER_OPTIONS)
            if unknown:
                raise TypeError(f"Limiter options: unknown {', '.join(unknown)} (known: {', '.join(_LIMITER_OPTIONS)})")
            Limiter.__init__(self, **concurrent, tool=tool)
            return
        for name, v, low in (("concurrent", concurrent, 1), ("max_queue", max_queue, 0), ("rate", rate, 1),
                             ("period_ms", period_ms, 0), ("burst", burst, 0)):
            _check_count(name, v, minimum=low)
        super().__init__(tool, lambda t: _limiter_new(t, concurrent, max_queue, rate, period_ms, burst))
