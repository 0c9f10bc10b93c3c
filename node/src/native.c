/*
 * futoin-polyglot/native: the FTN12 binary interface seen from JS.
 * binary() gives the FutoInAsyncSteps* of a flow or step, wrap() makes a JS
 * AsyncSteps of any provider's FutoInAsyncSteps*, symbol() finds a C
 * function in a shared library and addC() adds it as a step.
 */
#define _GNU_SOURCE /* process_vm_readv() */
#include "addon.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* whether n bytes at p can be read, asked of the kernel: an address of
 * memory that is not mapped is an answer here, not a crash when read */
static int mem_readable(const void* p, size_t n)
{
    char buf[1024];
    struct iovec local = {buf, n < sizeof(buf) ? n : sizeof(buf)};
    struct iovec remote = {(void*)(uintptr_t)p, local.iov_len};
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    return got == (ssize_t)local.iov_len || (got < 0 && errno != EFAULT); /* 1 too when it cannot tell */
}

static int addr_arg(napi_env env, napi_value v, void** out)
{
    napi_valuetype t;
    *out = NULL;
    if (napi_typeof(env, v, &t) != napi_ok) {
        return -1;
    }
    if (t == napi_undefined || t == napi_null) {
        return 0;
    }
    if (t == napi_bigint) {
        uint64_t u;
        bool lossless;
        if (napi_get_value_bigint_uint64(env, v, &u, &lossless) != napi_ok || !lossless) {
            return -1;
        }
        *out = (void*)(uintptr_t)u;
        return 0;
    }
    if (t == napi_number) {
        double d;
        napi_get_value_double(env, v, &d);
        if (!(d >= 0) || d > 9007199254740991.0) {
            return -1;
        }
        *out = (void*)(uintptr_t)(uint64_t)d;
        return 0;
    }
    return -1;
}

napi_value js_addr(napi_env env, const void* p)
{
    napi_value r;
    NAPI_OK(napi_create_bigint_uint64(env, (uint64_t)(uintptr_t)p, &r));
    return r;
}

/* binary(h) -> BigInt FutoInAsyncSteps* */
static napi_value n_binary(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    ++tl_env->sh[SH_TOUCH]; /* C code may change the flow through it */
    if (tl_env->sh[SH_OPS_N]) {
        js_flush_ops(tl_env);
    }
    hslot* h = jh_get(tl_env, argv[0], (1 << HK_STEP) | (1 << HK_ROOT) | (1 << HK_PARALLEL) | (1 << HK_FOREIGN));
    if (!h) {
        return js_throw_error(env, "InternalError", "Unexpected call, object is out of service");
    }
    if (h->root) {
        h->root->exported = 1; /* C code may keep the pointer: the flow stays while it waits */
    }
    return js_addr(env, h->bsi);
}

static void foreign_finalize(napi_env env, void* data, void* hint)
{
    (void)hint;
    jroot* r = data;
    jsenv* e = r->e;
    napi_delete_reference(env, r->obj);
    if (e->slots[r->slot].root == r) {
        jh_free(e, r->slot);
    }
    jroot_free(r);
}

/* wrap(obj, address) -> handle: obj becomes a JS AsyncSteps view of a
 * FutoInAsyncSteps* the caller keeps valid (a step inside its callback, or
 * a root of any provider until it is freed by its owner) */
static napi_value n_wrap(napi_env env, napi_callback_info info)
{
    jsenv* e = tl_env;
    size_t argc = 2;
    napi_value argv[2], out;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    void* p;
    if (argc < 2 || addr_arg(env, argv[1], &p) != 0 || !p) {
        return js_throw_type(env, "wrap() expects a FutoInAsyncSteps* address (BigInt)");
    }
    FutoInAsyncSteps* bsi = p;
    if (!mem_readable(bsi, sizeof(*bsi)) || !bsi->api || !mem_readable(bsi->api, sizeof(*bsi->api))
        || !bsi->api->add) {
        return js_throw_type(env, "wrap(): not a FutoInAsyncSteps*");
    }
    jroot* r = calloc(1, sizeof(jroot));
    if (!r) {
        return js_throw_error(env, "InternalError", "out of memory");
    }
    r->e = e;
    r->bsi = bsi;
    r->tool = futoin_steps_tool(bsi);
    r->foreign = 1;
    r->slot = jh_alloc(e, bsi, r, HK_FOREIGN);
    if (!r->slot || napi_wrap(env, argv[0], r, foreign_finalize, NULL, &r->obj) != napi_ok) {
        if (r->slot) {
            jh_free(e, r->slot);
        }
        free(r);
        return js_throw_error(env, "InternalError", "cannot wrap");
    }
    e->sh[SH_RET] = r->tool && r->tool == e->test_tool; /* on the AsyncToolTest tool */
    NAPI_OK(jh_new_id(e, r->slot, &out));
    return out;
}

/* symbol(library_path, name) -> BigInt address; the library stays loaded */
static napi_value n_symbol(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    char* path = argc > 0 ? js_strdup(env, argv[0]) : NULL;
    char* name = argc > 1 ? js_strdup(env, argv[1]) : NULL;
    if (!path || !name) {
        free(path);
        free(name);
        return js_throw_type(env, "symbol(library, name) expects two strings");
    }
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void* sym = lib ? dlsym(lib, name) : NULL;
    char msg[600];
    if (!sym) {
        const char* why = dlerror();
        snprintf(msg, sizeof(msg), "%s: %s", name, why ? why : "not found");
    }
    free(path);
    free(name);
    if (!sym) {
        return js_throw_type(env, msg);
    }
    return js_addr(env, sym);
}

/* addC(h, execute, onerror, data[, k]): a C step (addresses as BigInts);
 * k: the registry index of a JS error handler instead of a C one */
static napi_value n_add_c(napi_env env, napi_callback_info info)
{
    size_t argc = 5;
    napi_value argv[5];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    ++tl_env->sh[SH_TOUCH];
    if (tl_env->sh[SH_OPS_N]) {
        js_flush_ops(tl_env); /* steps queued before this one come first */
    }
    hslot* h = jh_get(tl_env, argv[0], (1 << HK_STEP) | (1 << HK_ROOT) | (1 << HK_PARALLEL) | (1 << HK_FOREIGN));
    if (!h) {
        return js_throw_error(env, "InternalError", "Unexpected call, object is out of service");
    }
    void *f, *eh, *data;
    if (addr_arg(env, argv[1], &f) != 0 || !f || addr_arg(env, argv[2], &eh) != 0
            || addr_arg(env, argv[3], &data) != 0) {
        return js_throw_type(env, "addC() expects function addresses (BigInt)");
    }
    FutoInAsyncSteps_execute_callback fc;
    FutoInAsyncSteps_error_callback ec;
    memcpy(&fc, &f, sizeof(fc));
    memcpy(&ec, &eh, sizeof(ec));
    uint32_t k;
    if (argc >= 5 && napi_get_value_uint32(env, argv[4], &k) == napi_ok) {
        if (js_add_c_with_js_eh(h->bsi, h->root, fc, data, k) != 0) {
            return js_throw_error(env, "InternalError", "add() on a completed step");
        }
        return NULL;
    }
    h->bsi->api->add(h->bsi, data, fc, ec);
    return NULL;
}

static napi_value n_is_native(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], r;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    void* p;
    if (addr_arg(env, argv[0], &p) != 0) {
        return js_throw_type(env, "isNative() expects an address");
    }
    NAPI_OK(napi_get_boolean(env, p && mem_readable(p, sizeof(FutoInAsyncSteps)) && futoin_steps_is_native(p), &r));
    return r;
}

/* toolAddress(test) -> the FutoInAsyncTool* for C code creating roots */
static napi_value n_tool_address(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    bool test = false;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_get_value_bool(env, argv[0], &test);
    return js_addr(env, test ? tl_env->test_tool : tl_env->tool);
}

napi_status js_native_register(napi_env env, napi_value exports)
{
    napi_status st = js_set_fn(env, exports, "binary", n_binary);
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "wrap", n_wrap);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "symbol", n_symbol);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "addC", n_add_c);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "isNative", n_is_native);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "toolAddress", n_tool_address);
    }
    return st;
}
