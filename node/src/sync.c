/*
 * Mutex, Throttle and Limiter of the core for JS. A sync object is an
 * external value; its FutoInSync is freed when the JS object is collected
 * (the JS side keeps it reachable from every flow that uses it).
 */
#include "addon.h"

#include <stdlib.h>

/* an id for s (0 on no memory: a sync op with it goes through N.sync) */
static uint32_t sync_id_new(jsenv* e, FutoInSync* s)
{
    if (!e->free_sync) {
        if (e->nsyncs == e->capsyncs) {
            uint32_t cap = e->capsyncs ? e->capsyncs * 2 : 64;
            FutoInSync** v = realloc(e->syncs, cap * sizeof(*v));
            if (v) {
                e->syncs = v;
            }
            uint32_t* nx = v ? realloc(e->sync_next, cap * sizeof(*nx)) : NULL;
            if (!nx) {
                return 0;
            }
            e->sync_next = nx;
            e->capsyncs = cap;
            if (e->nsyncs == 0) {
                e->syncs[0] = NULL; /* id 0: none */
                e->nsyncs = 1;
            }
        }
        e->free_sync = e->nsyncs + 1;
        e->sync_next[e->nsyncs++] = 0;
    }
    uint32_t id = e->free_sync - 1;
    e->free_sync = e->sync_next[id];
    e->syncs[id] = s;
    return id;
}

FutoInSync* js_sync_by_id(jsenv* e, uint32_t id)
{
    return id < e->nsyncs ? e->syncs[id] : NULL;
}

/* hint: the id; the table is the thread's (none after the env's cleanup) */
static void sync_finalize(napi_env env, void* data, void* hint)
{
    (void)env;
    uint32_t id = (uint32_t)(uintptr_t)hint;
    /* the instance that made it: the thread's first, or a guest of it */
    for (jsenv* e = js_env_first(); e; e = e->next_guest) {
        if (id && id < e->nsyncs && e->syncs[id] == data) {
            e->syncs[id] = NULL;
            e->sync_next[id] = e->free_sync;
            e->free_sync = id + 1;
            break;
        }
    }
    futoin_sync_free(data);
}

/* the external (FutoInSync* as its data) of a new sync object; its id in SH_RET */
static napi_value wrap_sync(napi_env env, FutoInSync* s)
{
    jsenv* e = tl_env;
    napi_value out;
    if (!s) {
        return js_throw_error(env, "InternalError", "cannot create the sync object");
    }
    uint32_t id = sync_id_new(e, s);
    if (napi_create_external(env, s, sync_finalize, (void*)(uintptr_t)id, &out) != napi_ok) {
        sync_finalize(env, s, (void*)(uintptr_t)id);
        return NULL;
    }
    e->sh[SH_RET] = (int32_t)id;
    return out;
}

static uint32_t u32_arg(napi_env env, napi_value v, uint32_t dflt)
{
    napi_valuetype t;
    double d;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_number || napi_get_value_double(env, v, &d) != napi_ok) {
        return dflt;
    }
    if (!(d >= 0)) {
        return 0;
    }
    return d >= (double)UINT32_MAX ? FUTOIN_UNLIMITED : (uint32_t)d;
}

static FutoInAsyncTool* tool_arg(napi_env env, napi_value v)
{
    bool test = false;
    napi_get_value_bool(env, v, &test);
    return test ? tl_env->test_tool : tl_env->tool;
}

/* a Throttle's (a Limiter's) period starts: JS runs it on the global
 * setInterval() while timers look mocked (a test's fake clock, which
 * futoin-asyncsteps' setInterval() follows too): onCall(-id, ms) is 1 */
static int period_start(void* data, FutoInSync* sync, uint32_t period_ms)
{
    jsenv* e = tl_env;
    napi_value argv[2];
    /* the JS of the instance that made it (not a guest's on this thread) */
    if (!e || js_sync_by_id(e, (uint32_t)(uintptr_t)data) != sync
            || napi_create_double(e->env, -(double)(uintptr_t)data, &argv[0]) != napi_ok
            || napi_create_uint32(e->env, period_ms, &argv[1]) != napi_ok) {
        return 0;
    }
    return js_call_fn(e, e->f_call, 2, argv) == 1;
}

/* a sync object of the real tool with a period: JS may take its periods */
static napi_value wrap_periodic(napi_env env, FutoInSync* s, int test)
{
    napi_value out = wrap_sync(env, s);
    if (out && !test && tl_env->sh[SH_RET]) {
        futoin_sync_set_period_hook(s, period_start, (void*)(uintptr_t)tl_env->sh[SH_RET]);
    }
    return out;
}

/* syncPeriodEnd(external) -> whether the period JS took goes on (its
 * setInterval() stops on false) */
static napi_value n_sync_period_end(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], out;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    jsenv* e = tl_env;
    if (e->sh[SH_OPS_N]) {
        js_flush_ops(e);
    }
    FutoInSync* s = js_sync_of(env, argv[0]);
    NAPI_OK(napi_get_boolean(env, s && futoin_sync_period_end(s) != 0, &out));
    return out;
}

/* mutexNew(test, max, max_queue|null) */
static napi_value n_mutex_new(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    return wrap_sync(env, futoin_mutex_new(tool_arg(env, argv[0]), u32_arg(env, argv[1], 1),
                                           u32_arg(env, argv[2], FUTOIN_UNLIMITED)));
}

/* throttleNew(test, max, period_ms, max_queue|null) */
static napi_value n_throttle_new(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    FutoInAsyncTool* tool = tool_arg(env, argv[0]);
    return wrap_periodic(env, futoin_throttle_new(tool, u32_arg(env, argv[1], 1), u32_arg(env, argv[2], 1000),
                                                  u32_arg(env, argv[3], FUTOIN_UNLIMITED)),
                         tool == tl_env->test_tool);
}

/* limiterNew(test, concurrent, max_queue, rate, period_ms, burst) */
static napi_value n_limiter_new(napi_env env, napi_callback_info info)
{
    size_t argc = 6;
    napi_value argv[6];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.concurrent = u32_arg(env, argv[1], o.concurrent);
    o.max_queue = u32_arg(env, argv[2], o.max_queue);
    o.rate = u32_arg(env, argv[3], o.rate);
    o.period_ms = u32_arg(env, argv[4], o.period_ms);
    o.burst = u32_arg(env, argv[5], o.burst);
    FutoInAsyncTool* tool = tool_arg(env, argv[0]);
    return wrap_periodic(env, futoin_limiter_new(tool, &o), tool == tl_env->test_tool);
}

/* ---- a JS object with lock(as)/unlock(as) as an FTN12 sync object ----
 * The binary protocol itself: lock() returning means acquired, as.waitExternal()
 * and a later as.success() means acquired after waiting, as.error() rejects;
 * unlock() runs when the protected step ends. For flows driven from C. */

typedef struct jsync
{
    FutoInSync base;
    jfrag lock, unlock;
} jsync;

static void jsync_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    js_run_step(bsi, &((jsync*)sync)->lock, 1, NULL, 0);
}

static void jsync_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    js_run_step(bsi, &((jsync*)sync)->unlock, 1, NULL, 0);
}

static const FutoInSyncAPI k_jsync_api = {{{jsync_lock, jsync_unlock}}};

/* syncAdapter(view, klock, kunlock) -> BigInt FutoInSync*; `view` (a JS
 * AsyncSteps giving the callbacks their state) and the object live on */
static napi_value n_sync_adapter(napi_env env, napi_callback_info info)
{
    jsenv* e = tl_env;
    size_t argc = 3;
    napi_value argv[3];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    uint32_t kl = 0, ku = 0;
    napi_get_value_uint32(env, argv[1], &kl);
    napi_get_value_uint32(env, argv[2], &ku);
    jroot* r = calloc(1, sizeof(jroot));
    jsync* js = calloc(1, sizeof(jsync));
    if (!r || !js || napi_create_reference(env, argv[0], 1, &r->obj) != napi_ok) {
        free(r);
        free(js);
        return js_throw_error(env, "InternalError", "out of memory");
    }
    r->e = e;
    r->foreign = 1;
    r->live = 1; /* never released: C code may keep the pointer */
    *(const FutoInSyncAPI**)&js->base.api = &k_jsync_api;
    js->lock.root = r;
    js->lock.k = kl;
    js->unlock.root = r;
    js->unlock.k = ku;
    return js_addr(env, js);
}

/* syncAddress(external) -> BigInt FutoInSync* of a Mutex/Throttle/Limiter */
static napi_value n_sync_address(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    FutoInSync* s = js_sync_of(env, argv[0]);
    if (!s) {
        return js_throw_type(env, "a Mutex, Throttle or Limiter of futoin-polyglot expected");
    }
    return js_addr(env, s);
}

/* syncTimer(external) -> whether a Throttle's (a Limiter's) period timer runs */
static napi_value n_sync_timer(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], out;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    FutoInSync* s = js_sync_of(env, argv[0]);
    if (!s) {
        return js_throw_type(env, "a Mutex, Throttle or Limiter of futoin-polyglot expected");
    }
    NAPI_OK(napi_get_boolean(env, futoin_sync_timer_pending(s) != 0, &out));
    return out;
}

/* syncStats(external) -> [inside, mutex waiting, entries, throttle waiting] */
static napi_value n_sync_stats(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], out, v;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    FutoInSyncStats st;
    if (futoin_sync_stats(js_sync_of(env, argv[0]), &st) != 0) {
        return js_throw_type(env, "a Mutex, Throttle or Limiter of futoin-polyglot expected");
    }
    const uint32_t vals[4] = {st.inside, st.mutex_waiting, st.entries, st.throttle_waiting};
    NAPI_OK(napi_create_array_with_length(env, 4, &out));
    for (uint32_t i = 0; i < 4; ++i) {
        NAPI_OK(napi_create_uint32(env, vals[i], &v));
        NAPI_OK(napi_set_element(env, out, i, v));
    }
    return out;
}

/* throttleEnter(id) -> whether the Throttle of sync id counted an entry now
 * (lib/AsyncSteps.js mergeInner: its section then runs as a plain sub-step);
 * changes no flow: no flush of queued operations */
static napi_value n_throttle_enter(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], out;
    uint32_t id = 0;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_get_value_uint32(env, argv[0], &id);
    NAPI_OK(napi_get_boolean(env, futoin_throttle_try_enter(js_sync_by_id(tl_env, id)) != 0, &out));
    return out;
}

FutoInSync* js_sync_of(napi_env env, napi_value v)
{
    napi_valuetype t;
    void* p = NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external || napi_get_value_external(env, v, &p) != napi_ok) {
        return NULL;
    }
    return p;
}

napi_status js_sync_register(napi_env env, napi_value exports)
{
    napi_status st = js_set_fn(env, exports, "mutexNew", n_mutex_new);
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "throttleNew", n_throttle_new);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "limiterNew", n_limiter_new);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "syncAdapter", n_sync_adapter);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "syncAddress", n_sync_address);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "syncTimer", n_sync_timer);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "syncStats", n_sync_stats);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "throttleEnter", n_throttle_enter);
    }
    if (st == napi_ok) {
        st = js_set_fn(env, exports, "syncPeriodEnd", n_sync_period_end);
    }
    return st;
}
