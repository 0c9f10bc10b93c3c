"""C interop: C steps (CStep) compiled at test time against the headers
shipped in the installed package, mixed with Python steps in one flow.

A missing C compiler FAILS these tests (CI has ``cc``): they never skip."""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import subprocess
import tempfile

import pytest

import futoin_polyglot
from futoin_polyglot import AsyncSteps, CStep, FutoInError, StepHandle

C_SOURCE = r"""
#include <futoin/binarysteps.h>
#include <string.h>

static const FutoInType k_i32 = {FTN_TYPE_INT32, NULL};
static const FutoInType k_f64 = {FTN_TYPE_DOUBLE, NULL};
static const FutoInType k_str = {FTN_TYPE_STRING, NULL};

static void succeed_i32(FutoInAsyncSteps* bsi, int32_t v)
{
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_i32;
    out.arg0.i32 = v;
    bsi->api->success(bsi, &out);
}

/* success(INT32): *data or 42 */
void c_answer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    succeed_i32(bsi, data ? *(const int32_t*)data : 42);
}

/* receives a Python int (INT64), returns it + 1 as INT32 */
void c_increment(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    const FutoInType* t = args->arg0.type;
    if (!t || (t->flags & FTN_BASE_TYPE_MASK) != FTN_TYPE_INT64) {
        bsi->api->handle_error(bsi, "TypeMismatch", "expected INT64");
        return;
    }
    succeed_i32(bsi, (int32_t)(args->arg0.i64 + 1));
}

/* receives a Python float (DOUBLE) and str (STRING): returns d * 2, len */
void c_double_and_len(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    if (!args->arg0.type || (args->arg0.type->flags & FTN_BASE_TYPE_MASK) != FTN_TYPE_DOUBLE
        || !args->arg1.type || (args->arg1.type->flags & FTN_BASE_TYPE_MASK) != FTN_TYPE_STRING) {
        bsi->api->handle_error(bsi, "TypeMismatch", "expected DOUBLE, STRING");
        return;
    }
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_f64;
    out.arg0.d = args->arg0.d * 2;
    out.arg1.type = &k_i32;
    out.arg1.i32 = (int32_t)strlen(args->arg1.cstr);
    bsi->api->success(bsi, &out);
}

void c_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->handle_error(bsi, "CError", "raised in C");
}

/* C error handler: recovers with a string built from the code and error_info */
static char g_msg[256];
void c_recover(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    strcpy(g_msg, "C handled ");
    strncat(g_msg, code, 100);
    strcat(g_msg, "/");
    strncat(g_msg, info ? info : "(null)", 100);
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_str;
    out.arg0.cstr = g_msg;
    out.arg0.length = (uint32_t)strlen(g_msg);
    bsi->api->success(bsi, &out);
}

/* waits with a timeout: the Timeout error unwinds to Python */
void c_wait_timeout(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->setTimeout(bsi, data ? *(const uint32_t*)data : 100);
}

/* adds a Python step (a StepHandle) as its own sub-step */
typedef struct { FutoInAsyncSteps_execute_callback fn; void* data; } py_step;
void c_add_python(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    const py_step* s = data;
    bsi->api->add(bsi, s->data, s->fn, NULL);
}

/* fails with text that is no UTF-8 (latin-1 from a C library): in the info,
 * or (data set) in the code too */
void c_fail_latin1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->handle_error(bsi, data ? "Bad\xe9" : "CError", "caf\xe9");
}

/* success(STRING32) with a code point past U+10FFFF */
void c_bad_string32(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    static const FutoInType k_s32 = {FTN_TYPE_STRING32, NULL};
    static const char32_t text[] = {'h', 0x110000, 'i', 0};
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_s32;
    out.arg0.cstr32 = text;
    out.arg0.length = 3;
    bsi->api->success(bsi, &out);
}

/* success(1, <none>, 3): a gap in the slots */
void c_args_gap(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_i32;
    out.arg0.i32 = 1;
    out.arg2.type = &k_i32;
    out.arg2.i32 = 3;
    bsi->api->success(bsi, &out);
}

/* success(CUSTOM_OBJECT) of another runtime: the object at 0x1234 */
void c_foreign_object(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    static const FutoInType k_obj = {FTN_TYPE_CUSTOM_OBJECT, NULL};
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_obj;
    out.arg0.p = (const void*)(uintptr_t)0x1234;
    bsi->api->success(bsi, &out);
}

/* careless producers: arrays of 4 without their memory, booleans that are
 * neither 0 nor 1 */
void c_careless(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    static const FutoInType k_u8a = {FTN_TYPE_UINT8 | FTN_TYPE_ARRAY, NULL};
    static const FutoInType k_i32a = {FTN_TYPE_INT32 | FTN_TYPE_ARRAY, NULL};
    static const FutoInType k_boola = {FTN_TYPE_BOOL | FTN_TYPE_ARRAY, NULL};
    static const unsigned char bools[] = {2, 0, 1};
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_u8a;
    out.arg0.length = 4;
    out.arg1.type = &k_i32a;
    out.arg1.length = 4;
    out.arg2.type = &k_boola;
    out.arg2.p = bools;
    out.arg2.length = 3;
    bsi->api->success(bsi, &out);
}

void c_careless_str(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    static const FutoInType k_s8 = {FTN_TYPE_STRING, NULL};
    static const FutoInType k_s16 = {FTN_TYPE_STRING16, NULL};
    static const FutoInType k_s32 = {FTN_TYPE_STRING32, NULL};
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_s8;
    out.arg0.length = 5;
    out.arg1.type = &k_s16;
    out.arg1.length = 5;
    out.arg2.type = &k_s32;
    out.arg2.length = 5;
    bsi->api->success(bsi, &out);
}

/* called through ctypes with a root's binary(): C cancels it */
void c_cancel(FutoInAsyncSteps* bsi)
{
    bsi->api->cancel(bsi);
}

/* a flow made and run by C code: root gets (f, data) with c_recover */
void c_add_recovered(FutoInAsyncSteps* root, FutoInAsyncSteps_execute_callback f, void* data)
{
    root->api->add(root, data, f, c_recover);
}

void c_execute(FutoInAsyncSteps* root)
{
    root->api->execute(root, NULL, NULL);
}

void c_free(FutoInAsyncSteps* root)
{
    root->api->free(root);
}

const char* c_last_msg(void)
{
    return g_msg;
}

/* C code syncs its sub-step c_answer on the FutoInSync* given as data */
void c_add_synced(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->addSync(bsi, (FutoInSync*)data, NULL, c_answer, NULL);
}

/* called directly through ctypes with a step's binary() */
int c_is_same_thread(FutoInAsyncSteps* bsi)
{
    return bsi->api->is_same_thread(bsi);
}
"""

_LIB = {}


def clib():
    """Compile and load the test library once; fail (never skip) without cc."""
    if "lib" in _LIB:
        return _LIB["lib"]
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.fail("no C compiler (cc) found: the C interop tests need one")
    include = os.path.join(os.path.dirname(futoin_polyglot.__file__), "include")
    assert os.path.isfile(os.path.join(include, "futoin", "binarysteps.h")), include
    build = tempfile.mkdtemp(prefix="futoin_cinterop_")
    atexit.register(shutil.rmtree, build, True)  # the loaded library may go: Linux keeps its mapping
    src = os.path.join(build, "csteps.c")
    so = os.path.join(build, "libcsteps.so")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    proc = subprocess.run(
        [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I", include, "-o", so, src],
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        pytest.fail("compiling the C test steps failed:\n" + proc.stderr)
    lib = ctypes.CDLL(so)
    _LIB["lib"] = lib
    return lib


def addr(name):
    return ctypes.cast(getattr(clib(), name), ctypes.c_void_p).value


def cstep(name, data=None, keep=None, onerror=None):
    return CStep(addr(name), data, keep=(clib(), keep), onerror=onerror)


def received_from(tool, name):
    """the values a Python step receives from C step `name` of a flow"""
    got = []
    root = AsyncSteps(tool)
    root.add(cstep(name))
    root.add(lambda as_, *values: got.append(values))
    root.run()
    return got[0]


def test_headers_are_shipped():
    inc = os.path.join(os.path.dirname(futoin_polyglot.__file__), "include", "futoin")
    for h in ("binarysteps.h", "binaryval.h", "core.h"):
        assert os.path.isfile(os.path.join(inc, h)), h


def test_c_step_int32_reaches_python_as_int(virtual_tool):
    got = list(received_from(virtual_tool, "c_answer"))
    assert got == [42]
    assert type(got[0]) is int


def test_c_arrays_without_memory_come_as_zeros_and_any_nonzero_byte_is_true(virtual_tool):
    # a NULL pointer with a length crashed (int arrays) or gave uninitialised bytes
    assert received_from(virtual_tool, "c_careless") == (b"\0\0\0\0", [0, 0, 0, 0], [True, False, True])
    # strings without memory: empty (a length with a NULL pointer was read past "")
    assert received_from(virtual_tool, "c_careless_str") == ("", "", "")


def test_c_step_from_a_ctypes_function(virtual_tool):
    # the README's "from ctypes.CDLL(...).symbol": it raised TypeError
    as_ = AsyncSteps(virtual_tool)
    as_.add(CStep(clib().c_answer, keep=clib()))
    assert as_.run() == 42


def test_c_step_keeps_its_ctypes_function_alive(virtual_tool):
    # only its address was taken: a CFUNCTYPE thunk made for the step was
    # freed, and the step ran whatever took its place
    import gc

    EXEC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    calls = []
    step = CStep(EXEC(lambda b, d, a: calls.append("ran")))
    gc.collect()
    other = EXEC(lambda b, d, a: calls.append("another function"))
    AsyncSteps(virtual_tool).add(step).execute()
    virtual_tool.run()
    assert calls == ["ran"]
    del other


def test_c_step_onerror_must_be_a_c_step():
    # a Python handler (or anything else) was taken and silently dropped
    for bad in (lambda as_, code: None, 5, "eh"):
        with pytest.raises(TypeError, match="onerror"):
            CStep(addr("c_answer"), onerror=bad)
    with pytest.raises(TypeError):
        CStep("c_answer")
    with pytest.raises(TypeError):
        CStep(ctypes.c_int(5))


def test_c_step_with_data_pointer(virtual_tool):
    value = ctypes.c_int32(-123456)
    as_ = AsyncSteps(virtual_tool)
    as_.add(cstep("c_answer", ctypes.addressof(value), keep=value))
    assert as_.run() == -123456


def test_python_values_reach_c_and_back(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.success(41))
    as_.add(cstep("c_increment"))
    as_.add(lambda as_, v: as_.success(float(v) / 4, "x" * v))
    as_.add(cstep("c_double_and_len"))
    assert as_.run() == (21.0, 42)


def test_c_steps_chain_and_substep_of_python_step(virtual_tool):
    def py(as_):
        as_.add(cstep("c_answer"))
        as_.add(cstep("c_increment"))  # INT32 from C is not INT64: type mismatch

    as_ = AsyncSteps(virtual_tool)
    as_.add(py, lambda as_, code: as_.success(code, as_.state.error_info))
    assert as_.run() == ("TypeMismatch", "expected INT64")


def test_c_handle_error_handled_by_python_onerror(virtual_tool):
    seen = {}

    def handler(as_, code):
        seen["code"] = code
        seen["info"] = as_.state.error_info
        as_.success("python recovered")

    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.add(cstep("c_fail")), handler)
    as_.add(lambda as_, v: as_.success(v + "!"))
    assert as_.run() == "python recovered!"
    assert seen == {"code": "CError", "info": "raised in C"}


def test_c_error_unhandled_reaches_run(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.add(cstep("c_fail"))
    with pytest.raises(FutoInError) as ei:
        as_.run()
    assert (ei.value.code, ei.value.info) == ("CError", "raised in C")


def test_c_step_with_c_error_handler(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.add(cstep("c_fail", onerror=cstep("c_recover")))
    as_.add(lambda as_, s: as_.success(s, type(s)))
    assert as_.run() == ("C handled CError/raised in C", str)


def test_an_error_c_raised_and_handled_leaves_a_futoin_error_in_last_exception(virtual_tool):
    # spec 1.7: last_exception holds FutoIn errors too (it was None: C has
    # no exception object and the C handler converted nothing)
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(cstep("c_fail", onerror=cstep("c_recover")))
    as_.add(lambda as_, s: seen.append(as_.state.last_exception))
    as_.run()
    [exc] = seen
    assert isinstance(exc, FutoInError)
    assert (exc.code, exc.info) == ("CError", "raised in C")
    # the same object on each read
    assert as_.state.last_exception is exc


class PyStep(ctypes.Structure):
    _fields_ = [("fn", ctypes.c_void_p), ("data", ctypes.c_void_p)]


def test_c_error_handler_catches_python_exception(virtual_tool):
    """C step -> Python sub-step that raises -> the C step's C error handler
    sees the Python exception's class name and message."""

    def py_fail(as_):
        raise ValueError("py side")

    handle = StepHandle(py_fail, virtual_tool)
    pair = PyStep(handle.execute_callback, handle.data)
    as_ = AsyncSteps(virtual_tool)
    as_.add(cstep("c_add_python", ctypes.addressof(pair), keep=pair, onerror=cstep("c_recover")))
    assert as_.run() == "C handled ValueError/py side"
    handle.close()


def test_c_timeout_in_virtual_time(virtual_tool):
    ms = ctypes.c_uint32(7000)
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: as_.add(cstep("c_wait_timeout", ctypes.addressof(ms), keep=ms)),
            lambda as_, code: as_.success(code, virtual_tool.now()))
    assert as_.run() == ("Timeout", 7000)


def test_c_step_adds_python_step_via_step_handle(virtual_tool):
    got = []

    def py_sub(as_, *args):
        got.append(("python sub-step", args, as_.is_same_thread()))
        as_.success("from python")

    handle = StepHandle(py_sub, virtual_tool)
    pair = PyStep(handle.execute_callback, handle.data)
    as_ = AsyncSteps(virtual_tool)
    as_.add(cstep("c_add_python", ctypes.addressof(pair), keep=pair))
    as_.add(lambda as_, v: as_.success(v.upper()))
    assert as_.run() == "FROM PYTHON"
    assert got == [("python sub-step", (), True)]
    handle.close()


def test_an_abandoned_flow_waiting_in_a_step_handle_leaves_the_handle_its_step(virtual_tool):
    # the StepHandle's step is C code's, not the flow's: the collection that
    # takes the flow must not take the handle's function with it
    import gc
    import weakref

    log = []

    def make_handle():
        def py_wait(as_):
            as_.set_cancel(lambda a: log.append("cancelled"))
            log.append("waits")
            as_.wait_external()

        return StepHandle(py_wait, virtual_tool), weakref.ref(py_wait)

    handle, func = make_handle()
    pair = PyStep(handle.execute_callback, handle.data)

    def abandon():
        root = AsyncSteps(virtual_tool).add(cstep("c_add_python", ctypes.addressof(pair), keep=pair))
        root.state["me"] = root  # a cycle: the collector, not the refcount, takes it
        root.execute()
        virtual_tool.run()
        return weakref.ref(root)

    ref = abandon()
    gc.collect()
    assert ref() is None
    assert func() is not None
    assert log == ["waits", "cancelled"]
    # the handle's step runs again, in another flow
    root = AsyncSteps(virtual_tool).add(cstep("c_add_python", ctypes.addressof(pair), keep=pair))
    root.execute()
    virtual_tool.run()
    assert log == ["waits", "cancelled", "waits"]
    root.cancel()
    handle.close()


def test_c_steps_in_parallel_and_loops(virtual_tool):
    as_ = AsyncSteps(virtual_tool)
    as_.state.total = 0
    p = as_.parallel()
    for _ in range(3):
        def branch(as_):
            as_.add(cstep("c_answer"))
            as_.add(lambda as_, v: as_.state.__setitem__("total", as_.state.total + v))

        p.add(branch)

    def body(as_, i):
        as_.add(lambda as_: as_.success(i))
        as_.add(cstep("c_increment"))
        as_.add(lambda as_, v: as_.state.__setitem__("total", as_.state.total + v))

    as_.repeat(4, body)
    as_.add(lambda as_: as_.success(as_.state.total))
    assert as_.run() == 3 * 42 + (1 + 2 + 3 + 4)


def test_c_step_in_copied_model(virtual_tool):
    model = AsyncSteps(virtual_tool)
    model.add(cstep("c_answer"))
    model.add(cstep("c_fail", onerror=cstep("c_recover")))
    a = AsyncSteps(virtual_tool).copy_from(model)
    b = AsyncSteps(virtual_tool).copy_from(model)
    assert a.run() == "C handled CError/raised in C"
    assert b.run() == "C handled CError/raised in C"


def test_c_sees_binary_of_python_view(virtual_tool):
    fn = clib().c_is_same_thread
    fn.argtypes = [ctypes.c_void_p]
    fn.restype = ctypes.c_int
    seen = []
    as_ = AsyncSteps(virtual_tool)
    as_.add(lambda as_: seen.append(fn(as_.binary())))
    as_.run()
    assert seen == [1]


def test_c_error_text_that_is_no_utf8_reaches_python_handlers(virtual_tool):
    # latin-1 from a C library: replaced, as JS does (a UnicodeDecodeError
    # hid the error, or the handler was never called)
    for data, code in ((None, "CError"), (1, "Bad\ufffd")):  # data: a flag, never read
        seen = []

        def onerror(as_, c):
            seen.append((c, as_.state.error_info, type(as_.state.last_exception).__name__))
            as_.success("recovered")

        root = AsyncSteps(virtual_tool)
        root.add(lambda as_: as_.add(cstep("c_fail_latin1", data)), onerror)
        assert root.run() == "recovered"
        assert seen == [(code, "caf\ufffd", "FutoInError")]


def test_c_string32_past_unicode_becomes_replacement(virtual_tool):
    got = list(received_from(virtual_tool, "c_bad_string32"))
    assert got == ["h\ufffdi"]
    assert list(got[0]) == ["h", "\ufffd", "i"]


def test_c_values_with_a_gap_keep_their_positions(virtual_tool):
    got = []
    root = AsyncSteps(virtual_tool)
    root.add(cstep("c_args_gap"))
    root.add(lambda as_, a=None, b=None, c=None: got.append((a, b, c)))
    root.run()
    assert got == [(1, None, 3)]


def test_foreign_c_object_reaches_python_as_its_address(virtual_tool):
    got = list(received_from(virtual_tool, "c_foreign_object"))
    import gc

    gc.collect()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    assert get(got[0], b"futoin.foreign_object") == 0x1234


def test_str_with_lone_surrogates_crosses_as_a_string(virtual_tool):
    # C gets STRING with U+FFFD for them (as from JS), not a CUSTOM_OBJECT;
    # a Python receiver gets the very str
    got = []
    root = AsyncSteps(virtual_tool)
    root.add(lambda as_: as_.success(2.0, "a\ud800b"))
    root.add(cstep("c_double_and_len"))
    root.add(lambda as_, d, n: got.append((d, n)))
    root.add(lambda as_: as_.success("x\udc00"))
    root.add(lambda as_, s: got.append(s))
    root.run()
    assert got == [(4.0, len("a\ufffdb".encode())), "x\udc00"]


def test_root_cancelled_by_c_cancels_its_promise():
    # C cancels it through the binary interface, not root.cancel(): the
    # future stayed pending and the root in the running registry
    import asyncio

    cancelled = []
    cancel = clib().c_cancel
    cancel.argtypes = [ctypes.c_void_p]
    cancel.restype = None

    async def main():
        root = AsyncSteps()
        root.add(lambda as_: (as_.wait_external(), as_.set_cancel(lambda _a: cancelled.append(True))))
        fut = root.promise()
        asyncio.get_running_loop().call_soon(cancel, root.binary())
        await asyncio.wait([fut])  # a hang guard's cancel would not cancel fut
        return fut.cancelled(), id(root) in futoin_polyglot._running

    assert asyncio.run(main()) == (True, False)
    assert cancelled == [True]


def test_system_exit_in_a_flow_run_by_c_stays_in_that_flow(virtual_tool, monkeypatch):
    # no call of ours runs it: reported as from a C callback; it was kept and
    # raised by the next, unrelated run() of this thread
    import sys

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_type))
    ext = ctypes.CDLL(futoin_polyglot._futoin.__file__)
    ext.futoin_tool_new.restype = ctypes.c_void_p
    ext.futoin_steps_new.restype = ctypes.c_void_p
    ext.futoin_steps_new.argtypes = [ctypes.c_void_p]
    ext.futoin_tool_run.argtypes = [ctypes.c_void_p]
    ext.futoin_tool_free.argtypes = [ctypes.c_void_p]
    lib = clib()
    lib.c_add_recovered.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.c_execute.argtypes = [ctypes.c_void_p]
    lib.c_free.argtypes = [ctypes.c_void_p]
    lib.c_last_msg.restype = ctypes.c_char_p

    def bye(as_):
        raise SystemExit(3)

    handle = StepHandle(bye, virtual_tool)
    tool = ext.futoin_tool_new()
    root = ext.futoin_steps_new(tool)
    lib.c_add_recovered(root, handle.execute_callback, handle.data)
    lib.c_execute(root)
    ext.futoin_tool_run(tool)
    lib.c_free(root)
    ext.futoin_tool_free(tool)
    handle.close()
    assert lib.c_last_msg() == b"C handled SystemExit/3"
    assert reported == [SystemExit]
    assert AsyncSteps(virtual_tool).add(lambda as_: as_.success("unrelated")).run() == "unrelated"


def test_c_step_with_a_python_error_handler(virtual_tool):
    # DESIGN: a C sub-step whose error handler is in another language
    seen = []

    def onerror(as_, code):
        seen.append((code, as_.state.error_info))
        as_.success("python recovered")

    root = AsyncSteps(virtual_tool)
    root.add(lambda as_: as_.success(20))
    root.add(cstep("c_fail"), onerror)
    assert root.run() == "python recovered"
    assert seen == [("CError", "raised in C")]
    # the C function still gets its own data and the values
    n = ctypes.c_int32(7)
    root = AsyncSteps(virtual_tool)
    root.add(cstep("c_answer", ctypes.addressof(n), keep=n), lambda as_, code: None)
    assert root.run() == 7
    with pytest.raises(TypeError, match="one error handler"):
        AsyncSteps(virtual_tool).add(cstep("c_fail", onerror=cstep("c_recover")), lambda as_, code: None)


def test_python_sync_objects_guard_c_steps_through_sync_address(virtual_tool):
    from futoin_polyglot import ISync, Mutex, sync_address

    log = []

    class Logged(ISync):
        def lock(self, as_):
            log.append("lock")

        def unlock(self, as_):
            log.append("unlock")

    for obj in (Logged(), Mutex(tool=virtual_tool)):
        root = AsyncSteps(virtual_tool)
        root.add(cstep("c_add_synced", sync_address(obj), keep=obj))
        assert root.run() == 42
    assert log == ["lock", "unlock"]
    assert sync_address(obj) == sync_address(obj)
    with pytest.raises(TypeError):
        sync_address(5)
