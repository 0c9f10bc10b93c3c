/*
 * Mutex, Throttle and Limiter of the core for JS. A sync object is an
 * external value; its FutoInSync is freed when the JS object is collected
 * (the JS side keeps it reachable from every flow that uses it).
 */
#include "addon.h"

#include <stdlib.h>

static void sync_finalize(napi_env env, void* data, void* hint)
{
    (void)env;
    (void)hint;
    futoin_sync_free(data);
}

static napi_value wrap_sync(napi_env env, FutoInSync* s)
{
    napi_value out;
    if (!s) {
        return js_throw_error(env, "InternalError", "cannot create the sync object");
    }
    if (napi_create_external(env, s, sync_finalize, NULL, &out) != napi_ok) {
        futoin_sync_free(s);
        return NULL;
    }
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
    return wrap_sync(env, futoin_throttle_new(tool_arg(env, argv[0]), u32_arg(env, argv[1], 1),
                                              u32_arg(env, argv[2], 1000), u32_arg(env, argv[3], FUTOIN_UNLIMITED)));
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
    return wrap_sync(env, futoin_limiter_new(tool_arg(env, argv[0]), &o));
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
    return st;
}
