/*
 * Module entry: per-environment state (so worker_threads each get their own
 * scheduler on their own loop) and small helpers.
 */
#include "addon.h"

#include <stdlib.h>
#include <string.h>

_Thread_local jsenv* tl_env;

napi_value js_throw_type(napi_env env, const char* msg)
{
    napi_throw_type_error(env, NULL, msg);
    return NULL;
}

/* Error(code) with error_info-like details in `.info`, as the JS library's
 * errors carry the code as their message */
napi_value js_throw_error(napi_env env, const char* code, const char* msg)
{
    napi_value m, err, i;
    if (napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &m) == napi_ok
            && napi_create_error(env, NULL, m, &err) == napi_ok) {
        if (msg && napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &i) == napi_ok) {
            napi_set_named_property(env, err, "info", i);
        }
        napi_throw(env, err);
    }
    return NULL;
}

/* A second instance of the addon in the same thread (the package loaded
 * again after require.cache was cleared: jest.resetModules(), hot reload)
 * is a guest: its functions run with tl_env switched to its own state and
 * back, so the first instance keeps working and pays nothing for it. */
static _Thread_local jsenv* tl_registering;
static _Thread_local jsenv* tl_first;

jsenv* js_env_first(void)
{
    return tl_first;
}

typedef struct jfn
{
    napi_callback cb;
    jsenv* e;
} jfn;

static napi_value guest_call(napi_env env, napi_callback_info info)
{
    void* data = NULL;
    if (napi_get_cb_info(env, info, NULL, NULL, NULL, &data) != napi_ok || !data) {
        return NULL;
    }
    jfn* f = data;
    jsenv* prev = tl_env;
    tl_env = f->e;
    napi_value r = f->cb(env, info);
    tl_env = prev;
    return r;
}

napi_status js_set_fn(napi_env env, napi_value obj, const char* name, napi_callback cb)
{
    napi_value f;
    napi_status st;
    jsenv* e = tl_registering;
    if (e && e->guest) {
        jfn* g = malloc(sizeof(jfn)); /* for the life of the process, as the instance */
        if (!g) {
            return napi_generic_failure;
        }
        g->cb = cb;
        g->e = e;
        st = napi_create_function(env, name, NAPI_AUTO_LENGTH, guest_call, g, &f);
    } else {
        st = napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &f);
    }
    return st == napi_ok ? napi_set_named_property(env, obj, name, f) : st;
}

jsenv* js_env_switch(jsenv* e)
{
    jsenv* prev = tl_env;
    tl_env = e;
    return prev;
}

char* js_strdup(napi_env env, napi_value v)
{
    napi_valuetype t;
    if (!v || napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null) {
        return NULL;
    }
    napi_value s = v;
    if (t != napi_string && napi_coerce_to_string(env, v, &s) != napi_ok) {
        napi_value exc;
        napi_get_and_clear_last_exception(env, &exc);
        return NULL;
    }
    size_t n;
    if (napi_get_value_string_utf8(env, s, NULL, 0, &n) != napi_ok) {
        return NULL;
    }
    char* out = malloc(n + 1);
    if (out && napi_get_value_string_utf8(env, s, out, n + 1, &n) != napi_ok) {
        free(out);
        return NULL;
    }
    return out;
}

static void env_cleanup(void* arg)
{
    jsenv* e = arg;
    jd_close(e);
    /* roots and sync objects may still be finalized after this hook; the
     * tools and the table stay allocated for them (one set per worker), the
     * live table is V8's and may be gone */
    e->live = NULL;
    e->gens = NULL;
    e->gone = 1; /* JS values C still holds are not released any more */
    js_roots_pool_free(e); /* roots finalized from now on are freed at once */
    if (tl_env == e) {
        tl_env = NULL;
    }
    if (tl_first == e) {
        tl_first = NULL;
    }
}

static napi_value make_ref(napi_env env, napi_value fn, napi_ref* out)
{
    napi_valuetype t;
    if (napi_typeof(env, fn, &t) != napi_ok || t != napi_function) {
        return js_throw_type(env, "init() expects functions");
    }
    NAPI_OK(napi_create_reference(env, fn, 1, out));
    return fn;
}

/* init(step, error, cancel, finish, call, drain, wake, production, hostArgs,
 * defer) -> Int32Array shared */
static napi_value n_init(napi_env env, napi_callback_info info)
{
    jsenv* e = tl_env;
    size_t argc = 10;
    napi_value argv[10];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 10 || e->f_step) {
        return js_throw_type(env, "init() takes seven dispatch functions, a flag, an array and a function, once");
    }
    if (!make_ref(env, argv[9], &e->f_defer)) {
        return NULL;
    }
    napi_ref* refs[7] = {&e->f_step, &e->f_error, &e->f_cancel, &e->f_finish, &e->f_call, &e->f_drain, &e->f_wake};
    for (int i = 0; i < 7; ++i) {
        if (!make_ref(env, argv[i], refs[i])) {
            return NULL;
        }
    }
    bool prod = false;
    napi_get_value_bool(env, argv[7], &prod);
    e->production = prod;
    const char* max = getenv("FUTOIN_POLYGLOT_MAX_HANDLES");
    long m = max ? strtol(max, NULL, 10) : 0;
    e->maxslots = m >= 256 && m < (long)JH_SLOTS ? (uint32_t)m : JH_SLOTS;
    NAPI_OK(napi_create_reference(env, argv[8], 1, &e->host_args));
    napi_value ab, arr;
    void* data;
    NAPI_OK(napi_create_arraybuffer(env, SH_SIZE * sizeof(int32_t), &data, &ab));
    NAPI_OK(napi_create_typedarray(env, napi_int32_array, SH_SIZE, ab, 0, &arr));
    NAPI_OK(napi_create_reference(env, ab, 1, &e->sh_ref));
    e->sh = data;
    /* 8 MiB of address space each: pages are only backed once slots reach them */
    napi_value lab, larr;
    NAPI_OK(napi_create_arraybuffer(env, JH_SLOTS * sizeof(int32_t), &data, &lab));
    NAPI_OK(napi_create_typedarray(env, napi_int32_array, JH_SLOTS, lab, 0, &larr));
    NAPI_OK(napi_create_reference(env, lab, 1, &e->live_ref));
    NAPI_OK(napi_set_named_property(env, arr, "live", larr));
    e->live = data;
    NAPI_OK(napi_create_arraybuffer(env, JH_SLOTS * sizeof(uint32_t), &data, &lab));
    NAPI_OK(napi_create_typedarray(env, napi_uint32_array, JH_SLOTS, lab, 0, &larr));
    NAPI_OK(napi_create_reference(env, lab, 1, &e->gens_ref));
    NAPI_OK(napi_set_named_property(env, arr, "gens", larr));
    e->gens = data;
    for (uint32_t s = 1; s < e->nslots; ++s) {
        if (e->slots[s].kind != HK_FREE) {
            e->live[s] = (int32_t)(e->slots[s].gen << JH_SLOT_BITS | s);
        }
    }
    return arr;
}

static napi_value n_version(napi_env env, napi_callback_info info)
{
    (void)info;
    napi_value v;
    NAPI_OK(napi_create_string_utf8(env, futoin_version(), NAPI_AUTO_LENGTH, &v));
    return v;
}

static napi_value module_setup(napi_env env, napi_value exports, jsenv* e);

static napi_value module_init(napi_env env, napi_value exports)
{
    jsenv* e = calloc(1, sizeof(jsenv));
    if (!e) {
        return js_throw_error(env, "InternalError", "out of memory");
    }
    e->env = env;
    jv_init(e);
    e->tool = futoin_tool_new();
    e->test_tool = futoin_tool_new();
    if (!e->tool || !e->test_tool) {
        return js_throw_error(env, "InternalError", "cannot create the scheduler");
    }
    futoin_tool_use_virtual_time(e->test_tool);
    e->test_sched = futoin_steps_new(e->test_tool);
    jsenv* first = tl_first;
    if (!first) {
        tl_first = e;
    } else {
        e->guest = 1;
        e->next_guest = first->next_guest; /* sync_finalize() looks guests up */
        first->next_guest = e;
    }
    tl_env = e; /* while registering, calls act on this instance */
    tl_registering = e;
    napi_value out = module_setup(env, exports, e);
    tl_registering = NULL;
    tl_env = first ? first : e; /* the thread's first instance uses tl_env directly */
    return out;
}

static napi_value module_setup(napi_env env, napi_value exports, jsenv* e)
{
    napi_value res_name, res;
    NAPI_OK(napi_create_object(env, &res));
    NAPI_OK(napi_create_reference(env, res, 1, &e->resource));
    NAPI_OK(napi_create_string_utf8(env, "futoin-polyglot", NAPI_AUTO_LENGTH, &res_name));
    NAPI_OK(napi_async_init(env, res, res_name, &e->actx));
    if (jd_init(e) != 0) {
        return js_throw_error(env, "InternalError", "no libuv loop");
    }
    NAPI_OK(napi_add_env_cleanup_hook(env, env_cleanup, e));
    if (js_set_fn(env, exports, "init", n_init) != napi_ok || js_set_fn(env, exports, "version", n_version) != napi_ok
            || js_set_fn(env, exports, "runNow", jd_run_now) != napi_ok
            || js_set_fn(env, exports, "hold", jd_hold) != napi_ok
            || js_steps_register(env, exports) != napi_ok || js_sync_register(env, exports) != napi_ok
            || js_native_register(env, exports) != napi_ok) {
        return NULL;
    }
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, module_init)
