/*
 * The host loop: the scheduler's hooks map to libuv handles of the Node
 * environment's own loop. Ready work runs in the check phase (where
 * setImmediate callbacks run), timers on a uv timer, posts from other threads
 * wake the loop through a uv_async. Handles are unreferenced whenever the
 * scheduler has nothing pending, so the process exits by itself. A flow
 * completed from outside goes on in a setImmediate() JS queued for it
 * (SH_IMM set while any is queued): after the callbacks queued before, as
 * futoin-asyncsteps goes on through callImmediate() (our check handle runs
 * ahead of Node's); the last of them runs a turn of whatever else is ready.
 */
#include "addon.h"

#include <time.h>

enum { TURN_READY, TURN_ALL, TURN_TIMERS };
static void turn(jsenv* e, int mode);
static void hook_arm(void* data, int64_t delay_ms);
static napi_value lib_exception_take(jsenv* e);

/* mode: TURN_TIMERS in a timers phase (our uv timer), TURN_ALL else */
static void run_iterate(jsenv* e, int mode)
{
    napi_env env = e->env;
    napi_handle_scope hs;
    if (napi_open_handle_scope(env, &hs) != napi_ok) {
        return;
    }
    jsenv* prev = js_env_switch(e); /* a guest instance's turn */
    napi_value res;
    napi_callback_scope cs;
    int scoped = napi_get_reference_value(env, e->resource, &res) == napi_ok
            && napi_open_callback_scope(env, res, e->actx, &cs) == napi_ok;
    jlazy lz;
    lz_enter(e, &lz);
    turn(e, mode);
    lz_leave(e, &lz);
    napi_value exc = lib_exception_take(e);
    if (exc) {
        napi_fatal_exception(env, exc); /* as from a timer callback of futoin-asyncsteps */
    }
    if (scoped) {
        /* runs process.nextTick callbacks and microtasks, as after any
         * other libuv callback of Node */
        napi_close_callback_scope(env, cs);
    }
    js_env_switch(prev);
    napi_close_handle_scope(env, hs);
}

/* fn(arg) of lib/AsyncSteps.js, which catches user code itself */
static void call_lib(jsenv* e, napi_ref fn, napi_value arg)
{
    napi_env env = e->env;
    napi_value f, undef, ret;
    if (napi_get_reference_value(env, fn, &f) != napi_ok || !f) {
        return;
    }
    napi_get_undefined(env, &undef);
    jsenv* prev = js_env_switch(js_env_first()); /* as call_js() */
    napi_status st = napi_call_function(env, undef, f, 1, &arg, &ret);
    js_env_switch(prev);
    if (st != napi_ok) {
        /* the library's own code threw (the step it ran has failed with it) */
        napi_value exc;
        if (napi_get_and_clear_last_exception(env, &exc) == napi_ok) {
            jd_lib_exception(e, exc);
        }
    }
}

/* fn(test) */
static void call_dispatch(jsenv* e, napi_ref fn, int test)
{
    napi_value arg;
    if (napi_get_boolean(e->env, test, &arg) == napi_ok) {
        call_lib(e, fn, arg);
    }
}

/* a step timeout's handlers ran: the steps after them go on through a
 * setImmediate() of their flow's own, queued now flow after flow (SH_IMM),
 * behind those queued meanwhile, as the JS library's callImmediate() */
static void defer_flows(jsenv* e)
{
    FutoInAsyncSteps* r;
    while ((r = futoin_tool_take_deferred_root(e->tool)) != NULL) {
        const jroot* jr = futoin_steps_host_data(r);
        napi_value h;
        if (jr && jr->slot && e->slots[jr->slot].root == jr && jh_new_id(e, jr->slot, &h) == napi_ok) {
            call_lib(e, e->f_defer, h);
        }
    }
    if (futoin_tool_take_deferred(e->tool)) {
        call_dispatch(e, e->f_defer, 0); /* what no flow of ours took */
    }
}

void jd_lib_exception(jsenv* e, napi_value exc)
{
    if (!e->lib_exc) {
        napi_create_reference(e->env, exc, 1, &e->lib_exc);
        hook_arm(e, 0); /* a turn comes to throw it */
    }
}

/* the exception jd_lib_exception() kept, or NULL */
static napi_value lib_exception_take(jsenv* e)
{
    napi_value exc = NULL;
    if (e->lib_exc) {
        napi_get_reference_value(e->env, e->lib_exc, &exc);
        napi_delete_reference(e->env, e->lib_exc);
        e->lib_exc = NULL;
    }
    return exc;
}

/* JS runs the plain JS steps the engine set aside (lib/AsyncSteps.js) */
static void drain_host(jsenv* e, FutoInAsyncTool* t)
{
    if (futoin_tool_host_pending(t)) {
        call_dispatch(e, e->f_drain, t == e->test_tool);
    }
}

/* one turn: ready work, then work made ready by it while fewer than 100 JS
 * steps ran, as the JS library runs 100 steps before it yields. `timers`:
 * a turn of our libuv handles; a turn JS asks for (runNow(): a promise
 * settled, a completion from outside) fires no step timeout, as Node fires
 * a setTimeout() only in its timers phase: a success() queued in a
 * microtask behind it comes first */
static void turn(jsenv* e, int mode)
{
    e->turn_steps = 0;
    (void)futoin_tool_take_deferred(e->tool); /* set outside a turn: this is the later one */
    for (int round = 0; round < 100; ++round) {
        /* due timers at the start only, as Node's timers phase: a timeout
         * that came due during the turn waits for the next one (a
         * process.nextTick() completion of its step comes first) */
        if (round == 0 && mode == TURN_TIMERS) {
            futoin_tool_iterate_timers(e->tool);
        } else if (round == 0 && mode == TURN_ALL) {
            /* the timers due when this loop iteration began (libuv's time):
             * one set in this turn fires in a timers phase, as Node's */
            futoin_tool_iterate_until(e->tool, 0, uv_now(e->loop));
        } else {
            futoin_tool_iterate_ready(e->tool, 0);
        }
        drain_host(e, e->tool);
        defer_flows(e);
        if (e->turn_steps >= 100 || !futoin_tool_has_ready(e->tool) || e->sh[SH_IMM] || mode == TURN_TIMERS) {
            break; /* SH_IMM: a flow completed from outside waits for its setImmediate() */
        }
    }
    /* our handles follow the scheduler again (a set-aside step may have
     * armed them behind its back), or come back for what is left */
    hook_arm(e, futoin_tool_host_pending(e->tool) ? 0 : futoin_tool_next_delay(e->tool));
}

void jd_arm_ready(jsenv* e)
{
    hook_arm(e, 0);
}

/* runNow(): a turn of the scheduler from JS (a promise settled); nothing
 * when called from inside the scheduler's own callbacks. runNow(true): the
 * turn of a setImmediate() (SH_IMM), a loop iteration of its own: due step
 * timers fire there too, as our uv timer rests while work is ready, so a
 * flow that never waits does not starve another's timeout or a Throttle
 * period (Node runs its timers phase on every iteration) */
napi_value jd_run_now(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    bool timers = false;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc >= 1) {
        napi_get_value_bool(env, argv[0], &timers);
    }
    jsenv* e = tl_env;
    if (e->sh[SH_OPS_N]) {
        js_flush_ops(e);
    }
    if (e->sh[SH_IMM]) {
        return NULL; /* a flow completed from outside waits for its setImmediate() turn */
    }
    jlazy lz;
    lz_enter(e, &lz);
    turn(e, timers ? TURN_ALL : TURN_READY);
    lz_leave(e, &lz);
    napi_value exc = lib_exception_take(e);
    if (exc) {
        napi_throw(env, exc); /* to the JS that asked for the turn */
    }
    return NULL;
}

/* hold(delta): while holds are taken the loop stays alive waiting for posts
 * from other threads (C code completing steps there) */
napi_value jd_hold(napi_env env, napi_callback_info info)
{
    jsenv* e = tl_env;
    size_t argc = 1;
    napi_value argv[1];
    int32_t d = 0;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1
            || napi_get_value_int32(env, argv[0], &d) != napi_ok || (d != 1 && d != -1)) {
        napi_throw_type_error(env, NULL, "hold(1) or hold(-1)");
        return NULL;
    }
    if (d < 0 && e->holds == 0) {
        napi_throw_error(env, NULL, "release() without keepAlive()");
        return NULL;
    }
    e->holds += (uint32_t)d;
    if (e->holds == 1 && d > 0) {
        uv_ref((uv_handle_t*)&e->async);
    } else if (e->holds == 0) {
        uv_unref((uv_handle_t*)&e->async);
    }
    return NULL;
}

/* Ready work goes on in a setImmediate() of JS (SH_IMM), queued now: Node
 * runs it in this check phase after us, behind the immediates queued before,
 * as the JS library's callImmediate() continuations. SH_IMM 1: JS queued one
 * already: skip (2). Still set at the next check phase: that immediate is
 * gone (fake timers of a test took it, and were uninstalled without running
 * it): the turn runs here */
static void on_check(uv_check_t* h)
{
    jsenv* e = h->data;
    if (e->sh[SH_IMM] == 1) {
        e->sh[SH_IMM] = 2;
        return;
    }
    if (e->sh[SH_IMM] == 0 && (futoin_tool_has_ready(e->tool) || futoin_tool_host_pending(e->tool))) {
        /* (a due timer alone: its turn here, timers fire in ours only) */
        napi_handle_scope hs;
        if (napi_open_handle_scope(e->env, &hs) == napi_ok) {
            call_dispatch(e, e->f_defer, 0);
            napi_close_handle_scope(e->env, hs);
        }
        if (e->sh[SH_IMM] == 1) {
            return;
        }
    }
    e->sh[SH_IMM] = 0;
    run_iterate(e, TURN_ALL);
}

static void on_idle(uv_idle_t* h)
{
    (void)h; /* only keeps the loop from blocking while work is ready */
}

/* a timers phase: the due timers fire, with what they finish in their event
 * (a step timeout's handlers); work ready meanwhile (a flow resumed from
 * outside) waits for the check phase, behind the setImmediate() callbacks
 * queued before it, as Node runs its immediates after its timers */
static void on_timer(uv_timer_t* h)
{
    run_iterate(h->data, TURN_TIMERS);
}

static void on_async(uv_async_t* h)
{
    run_iterate(h->data, TURN_ALL);
}

/* The scheduler's clock reads the time libuv's loop time is made of (its
 * "fast" monotonic clock, in ms), up to date, as Node's setTimeout() reads
 * it: deadlines fall where an equal setTimeout() of the same moment falls.
 * The loop's own time is left alone (moving it on in a timers phase would
 * fire timers armed in that phase at once, which Node does not). */
static clockid_t g_clock_id = CLOCK_MONOTONIC;
static pthread_once_t g_clock_once = PTHREAD_ONCE_INIT;

static void clock_choose(void)
{
    /* libuv's choice: the coarse clock when it ticks at least every ms */
    struct timespec t;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &t) == 0 && t.tv_sec == 0 && t.tv_nsec <= 1000000) {
        g_clock_id = CLOCK_MONOTONIC_COARSE;
    }
}

static uint64_t loop_clock(void* data)
{
    (void)data;
    struct timespec t;
    clock_gettime(g_clock_id, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static void hook_arm(void* data, int64_t delay_ms)
{
    jsenv* e = data;
    const int pending = futoin_tool_host_pending(e->tool);
    if (delay_ms != 0 && pending) {
        delay_ms = 0; /* JS steps set aside still wait for their turn */
    }
    /* 0 with nothing ready is a timer that is due: it fires in the next
     * timers phase, as an overdue setTimeout() of Node's, not behind the
     * immediates */
    const int ready = delay_ms == 0 && (pending || futoin_tool_has_ready(e->tool));
    if (ready) {
        if (e->armed != 0) {
            uv_timer_stop(&e->timer);
            uv_check_start(&e->check, on_check);
            uv_idle_start(&e->idle, on_idle);
        }
    } else {
        if (e->armed == 0) {
            uv_check_stop(&e->check);
            uv_idle_stop(&e->idle);
        }
        if (delay_ms >= 0) {
            /* libuv counts from the loop's time, which may lag the clock the
             * delay came from: the timer falls due at the deadline itself
             * (an equal setTimeout() set after it fires after it) */
            uint64_t now = loop_clock(e);
            uint64_t lag = now > uv_now(e->loop) ? now - uv_now(e->loop) : 0;
            uv_timer_start(&e->timer, on_timer, (uint64_t)delay_ms + lag, 0);
        } else {
            uv_timer_stop(&e->timer);
        }
    }
    e->armed = delay_ms < 0 ? -1 : ready ? 0 : 1;
}

static void hook_wakeup(void* data)
{
    jsenv* e = data;
    uv_async_send(&e->async); /* any thread */
}

int jd_init(jsenv* e)
{
    if (napi_get_uv_event_loop(e->env, &e->loop) != napi_ok) {
        return -1;
    }
    uv_timer_init(e->loop, &e->timer);
    uv_check_init(e->loop, &e->check);
    uv_idle_init(e->loop, &e->idle);
    uv_async_init(e->loop, &e->async, on_async);
    e->timer.data = e->check.data = e->idle.data = e->async.data = e;
    /* the check handle never keeps the loop alive on its own; the idle one
     * does while work is ready, the timer while one is due */
    uv_unref((uv_handle_t*)&e->check);
    uv_unref((uv_handle_t*)&e->async);
    e->armed = -1;
    pthread_once(&g_clock_once, clock_choose); /* workers too */
    futoin_tool_set_clock(e->tool, loop_clock, e);
    FutoInLoopHooks hooks = {e, hook_arm, hook_wakeup};
    futoin_tool_set_hooks(e->tool, &hooks);
    return 0;
}

/* No close callbacks: Node may unload the addon (its last worker ended)
 * before the loop finishes closing, and a callback would then point into
 * unmapped code. The handles live in `e`, which is never freed. */
void jd_close(jsenv* e)
{
    futoin_tool_set_hooks(e->tool, NULL);
    uv_close((uv_handle_t*)&e->timer, NULL);
    uv_close((uv_handle_t*)&e->check, NULL);
    uv_close((uv_handle_t*)&e->idle, NULL);
    uv_close((uv_handle_t*)&e->async, NULL);
}
