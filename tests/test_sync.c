/* Synchronization: Mutex, Throttle, Limiter and foreign FutoInSync providers
 * used through addSync() (FTN12 sections 1.11, 2.3-2.5, 2.7.3). Everything
 * runs in virtual time: critical sections "take time" through sched_deferred
 * timers, so an overlap or a wrong entry time shows in the trace. */
#include "helpers.h"

/* ---- a flow that enters a critical section ---- */

#define HOLD_FOREVER (-1)
#define NFLOWS 8

typedef struct flow
{
    const char* name;
    FutoInAsyncSteps* root; /* NULL when the flow runs as a parallel branch */
    FutoInSync* sync;
    int hold_ms;      /* 0: leave at once; >0: leave after; HOLD_FOREVER: until cancelled */
    const char* fail; /* error code raised when leaving instead of success */
    FutoInAsyncSteps* crit; /* the critical step while it waits */
    FutoInHandle timer;
    int entered;
    uint64_t enter_t;
    ptrdiff_t rid;
} flow;

static flow g_flows[NFLOWS];
static int g_inside;
static int g_max_inside;

static unsigned long long now_ms(void)
{
    return (unsigned long long)futoin_tool_now(g_fx.tool);
}

static void flows_init(FutoInSync* sync, int hold_ms)
{
    static const char* const names[NFLOWS] = {"A", "B", "C", "D", "E", "F", "G", "H"};
    memset(g_flows, 0, sizeof(g_flows));
    for (int i = 0; i < NFLOWS; ++i) {
        g_flows[i].name = names[i];
        g_flows[i].sync = sync;
        g_flows[i].hold_ms = hold_ms;
    }
    g_inside = 0;
    g_max_inside = 0;
}

static void flows_free(void)
{
    for (int i = 0; i < NFLOWS; ++i) {
        if (g_flows[i].root) {
            g_flows[i].root->api->free(g_flows[i].root);
            g_flows[i].root = NULL;
        }
    }
}

static void crit_leave(void* data)
{
    flow* f = data;
    FutoInAsyncSteps* bsi = f->crit;
    f->crit = NULL;
    trace("%s-%llu", f->name, now_ms());
    --g_inside;
    if (f->fail) {
        bsi->api->handle_error(bsi, f->fail, "crit failed");
    } else {
        bsi->api->success(bsi, NULL);
    }
}

static void crit_cancel(FutoInAsyncSteps* bsi, void* data)
{
    flow* f = data;
    if (!f->crit) {
        return; /* error unwinding after crit_leave(): already counted */
    }
    f->crit = NULL;
    bsi->api->sched_cancel(bsi, &f->timer);
    trace("%s:cancelled", f->name);
    --g_inside;
}

static void crit_hold(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    flow* f = data;
    ++f->entered;
    f->enter_t = futoin_tool_now(g_fx.tool);
    f->rid = bsi->api->rootId(bsi);
    trace("%s+%llu", f->name, now_ms());
    if (++g_inside > g_max_inside) {
        g_max_inside = g_inside;
    }
    if (f->hold_ms == 0) {
        trace("%s-%llu", f->name, now_ms());
        --g_inside;
        if (f->fail) {
            bsi->api->handle_error(bsi, f->fail, "crit failed");
        }
        return;
    }
    f->crit = bsi;
    bsi->api->setCancel(bsi, f, crit_cancel);
    if (f->hold_ms > 0) {
        f->timer = bsi->api->sched_deferred(bsi, (uint32_t)f->hold_ms, f, crit_leave);
    }
}

/* the flow's only step: the critical section under its sync */
static void flow_body(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    flow* f = data;
    bsi->api->addSync(bsi, f->sync, f, crit_hold, NULL);
}

/* outer handler: records code and error_info, then recovers */
static void flow_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    flow* f = data;
    trace("%s:%s:%s", f->name, code, error_info(bsi));
    bsi->api->success(bsi, NULL);
}

static void flow_start(flow* f)
{
    f->root = futoin_steps_new(g_fx.tool);
    assert_non_null(f->root);
    f->root->api->add(f->root, f, flow_body, flow_eh);
    f->root->api->execute(f->root, f, on_unhandled);
}

static void start_cb(void* data)
{
    flow_start(data);
}

static void flow_start_at(flow* f, uint32_t ms)
{
    g_fx.root->api->sched_deferred(g_fx.root, ms, f, start_cb);
}

static void cancel_cb(void* data)
{
    flow* f = data;
    trace("cancel:%s", f->name);
    f->root->api->cancel(f->root);
}

static void flow_cancel_at(flow* f, uint32_t ms)
{
    g_fx.root->api->sched_deferred(g_fx.root, ms, f, cancel_cb);
}

static void run_all(void)
{
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
}

static FutoInSync* limiter_new(uint32_t concurrent, uint32_t max_queue, uint32_t rate, uint32_t period_ms,
                               uint32_t burst)
{
    FutoInLimiterOptions o = {concurrent, max_queue, rate, period_ms, burst};
    return futoin_limiter_new(g_fx.tool, &o);
}

/* ---- Mutex ---- */

static void mutex_serializes_two_roots(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    assert_non_null(m);
    flows_init(m, 50);
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    run_all();
    assert_trace("A+0|A-50|B+50|B-100");
    assert_int_equal(g_max_inside, 1);
    flows_free();
    futoin_sync_free(m);
}

static void mutex_max2_third_waits(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 2, FUTOIN_UNLIMITED);
    flows_init(m, 50);
    for (int i = 0; i < 3; ++i) {
        flow_start(&g_flows[i]);
    }
    run_all();
    assert_int_equal(g_flows[0].enter_t, 0);
    assert_int_equal(g_flows[1].enter_t, 0);
    assert_int_equal(g_flows[2].enter_t, 50);
    assert_int_equal(g_max_inside, 2);
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(g_flows[i].entered, 1);
    }
    assert_int_equal(now_ms(), 100);
    flows_free();
    futoin_sync_free(m);
}

static FutoInSync* g_sync;

static void reent_inner(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
    trace("inner");
}

static void reent_outer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    trace("outer");
    bsi->api->addSync(bsi, g_sync, NULL, reent_inner, NULL);
    bsi->api->add(bsi, "outer2", f_trace, NULL);
}

static void mutex_reentrant_same_flow(void** state)
{
    (void)state;
    /* max_queue 0: a self-deadlock would show as DefenseRejected at once */
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    g_sync = m;
    flows_init(m, 0);
    FutoInAsyncSteps* as = g_fx.root;
    as->api->addSync(as, m, NULL, reent_outer, NULL);
    as->api->add(as, "after", f_trace, NULL);
    run_root();
    /* every level released: another flow gets the mutex without waiting */
    flow_start(&g_flows[0]);
    run_all();
    assert_trace("outer|inner|outer2|after|A+0|A-0");
    flows_free();
    futoin_sync_free(m);
}

static void mutex_parallel_branches_serialize(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    flows_init(m, 50);
    FutoInAsyncSteps* as = g_fx.root;
    ptrdiff_t root_rid = as->api->rootId(as);
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, &g_flows[0], flow_body, flow_eh);
    p->api->add(p, &g_flows[1], flow_body, flow_eh);
    as->api->add(as, "after", f_trace, NULL);
    run_root();
    assert_trace("A+0|A-50|B+50|B-100|after");
    assert_int_equal(g_max_inside, 1);
    assert_true(g_flows[0].rid != g_flows[1].rid);
    assert_true(g_flows[0].rid != root_rid);
    assert_true(g_flows[1].rid != root_rid);
    futoin_sync_free(m);
}

static void crit_with_branch(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    trace("parent in");
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, &g_flows[0], flow_body, flow_eh);
}

static void mutex_branch_does_not_inherit_lock(void** state)
{
    (void)state;
    /* a branch inside the parent's critical section is a different flow: with
     * max_queue 0 it is rejected instead of entering on the parent's lock */
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    flows_init(m, 0);
    FutoInAsyncSteps* as = g_fx.root;
    as->api->addSync(as, m, NULL, crit_with_branch, NULL);
    as->api->add(as, "after", f_trace, NULL);
    run_root();
    assert_trace("parent in|A:DefenseRejected:Mutex queue limit|after");
    assert_int_equal(g_flows[0].entered, 0);
    futoin_sync_free(m);
}

static void mutex_released_on_success(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    flows_init(m, 0);
    g_flows[0].hold_ms = 20;
    flow_start(&g_flows[0]);
    flow_start_at(&g_flows[1], 30);
    flow_start_at(&g_flows[2], 40);
    run_all();
    assert_trace("A+0|A-20|B+30|B-30|C+40|C-40");
    flows_free();
    futoin_sync_free(m);
}

static void mutex_released_on_error(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    flows_init(m, 0);
    g_flows[0].hold_ms = 20;
    g_flows[0].fail = "MyError";
    g_flows[2].fail = "Quick";
    flow_start(&g_flows[0]); /* fails after waiting, from a timer */
    flow_start(&g_flows[1]); /* queued behind A */
    flow_start_at(&g_flows[2], 30); /* fails inside the callback */
    flow_start_at(&g_flows[3], 40);
    run_all();
    assert_trace("A+0|A-20|A:MyError:crit failed|B+20|B-20|C+30|C-30|C:Quick:crit failed|"
                 "D+40|D-40");
    flows_free();
    futoin_sync_free(m);
}

static void crit_timed(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("%s in", (const char*)data);
    bsi->api->setTimeout(bsi, 10);
}

static void crit_enter(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    trace("%s in", (const char*)data);
}

/* a step timeout's handlers run in the timer's event, the release after
 * them (a step of its own in the JS reference's Mutex) and the steps after
 * it in the next one: the waiter is let in behind the step after the lock */
static void mutex_released_after_a_timeout_handler_in_the_next_event(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInSync* m = futoin_mutex_new(t, 1, FUTOIN_UNLIMITED);
    FutoInAsyncSteps* a = futoin_steps_new(t);
    FutoInAsyncSteps* b = futoin_steps_new(t);
    a->api->addSync(a, m, "A", crit_timed, eh_recover);
    a->api->add(a, "A next", f_trace, NULL);
    b->api->addSync(b, m, "B", crit_enter, NULL);
    a->api->execute(a, NULL, on_unhandled);
    b->api->execute(b, NULL, on_unhandled);
    futoin_tool_iterate(t, 0);
    assert_trace("A in");
    futoin_tool_advance(t, 10);
    assert_int_equal(futoin_tool_run_one(t), 1);
    assert_trace("A in|A:Timeout");
    assert_int_equal(futoin_tool_run(t), 0);
    assert_trace("A in|A:Timeout|A next|B in");
    a->api->free(a);
    b->api->free(b);
    futoin_sync_free(m);
}

static void mutex_released_on_cancel(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    flows_init(m, 0);
    g_flows[0].hold_ms = HOLD_FOREVER;
    g_flows[2].hold_ms = 100;
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    flow_cancel_at(&g_flows[0], 10);
    /* cancelled while inside after a timed hold: its timer must not fire */
    flow_start_at(&g_flows[2], 20);
    flow_cancel_at(&g_flows[2], 30);
    flow_start_at(&g_flows[3], 40);
    run_all();
    assert_trace("A+0|cancel:A|A:cancelled|B+10|B-10|C+20|cancel:C|C:cancelled|D+40|D-40");
    assert_int_equal(g_inside, 0);
    flows_free();
    futoin_sync_free(m);
}

static void mutex_cancel_waiting_removes_waiter(void** state)
{
    (void)state;
    /* max_queue 1: a stale waiter left by B would make C's lock rejected */
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 1);
    flows_init(m, 0);
    g_flows[0].hold_ms = 50;
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    flow_cancel_at(&g_flows[1], 10);
    flow_start_at(&g_flows[2], 20);
    run_all();
    assert_trace("A+0|cancel:B|A-50|C+50|C-50");
    assert_int_equal(g_flows[1].entered, 0);
    assert_int_equal(g_flows[2].entered, 1);
    flows_free();
    futoin_sync_free(m);
}

static void mutex_queue_limit(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 1);
    flows_init(m, 0);
    g_flows[0].hold_ms = 50;
    for (int i = 0; i < 3; ++i) {
        flow_start(&g_flows[i]);
    }
    run_all();
    assert_trace("A+0|C:DefenseRejected:Mutex queue limit|A-50|B+50|B-50");
    assert_int_equal(g_flows[2].entered, 0);
    flows_free();
    futoin_sync_free(m);
}

static void mutex_max_queue_zero_rejects(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    flows_init(m, 0);
    g_flows[0].hold_ms = 50;
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    run_all();
    assert_trace("A+0|B:DefenseRejected:Mutex queue limit|A-50");
    assert_int_equal(now_ms(), 50);
    flows_free();
    futoin_sync_free(m);
}


static void mutex_released_on_root_free(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    flows_init(m, 0);
    g_flows[0].hold_ms = HOLD_FOREVER;
    flow_start(&g_flows[0]);
    run_all();
    /* freeing a root inside the critical section cancels it and unlocks */
    g_flows[0].root->api->free(g_flows[0].root);
    g_flows[0].root = NULL;
    flow_start(&g_flows[1]);
    run_all();
    assert_trace("A+0|A:cancelled|B+0|B-0");
    flows_free();
    futoin_sync_free(m);
}

/* a flow body with a timeout around the whole addSync() */
static void timed_body(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    flow* f = data;
    bsi->api->setTimeout(bsi, 50);
    bsi->api->addSync(bsi, f->sync, f, crit_hold, NULL);
}

static void timed_start(flow* f)
{
    f->root = futoin_steps_new(g_fx.tool);
    assert_non_null(f->root);
    f->root->api->add(f->root, f, timed_body, flow_eh);
    f->root->api->execute(f->root, f, on_unhandled);
}

static void mutex_timeout_while_waiting(void** state)
{
    (void)state;
    /* max_queue 1: a stale waiter left by B would make C's lock rejected */
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 1);
    flows_init(m, 0);
    g_flows[0].hold_ms = 80;
    flow_start(&g_flows[0]);
    timed_start(&g_flows[1]); /* times out at 50 in the queue */
    flow_start_at(&g_flows[2], 60);
    run_all();
    assert_trace("A+0|B:Timeout:|A-80|C+80|C-80");
    assert_int_equal(g_flows[1].entered, 0);
    flows_free();
    futoin_sync_free(m);
}

static void mutex_timeout_same_tick_as_grant(void** state)
{
    (void)state;
    /* A is cancelled by a timer due at 50 that was set before B's timeout
     * (also due at 50): the cancel unlocks at once and grants B inside that
     * timer callback, then B's timeout fires in the same batch. B's outer
     * step is still not complete at its deadline: it must get Timeout (it may
     * or may not have entered first), never hang inside the mutex. */
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    flows_init(m, HOLD_FOREVER);
    flow_cancel_at(&g_flows[0], 50);
    flow_start(&g_flows[0]);
    timed_start(&g_flows[1]);
    g_flows[2].hold_ms = 0;
    flow_start_at(&g_flows[2], 60);
    run_all();
    int timed_out = strstr(g_trace, "B:Timeout:") != NULL;
    int c_entered = g_flows[2].entered;
    uint64_t c_enter_t = g_flows[2].enter_t;
    int inside = g_inside;
    if (!timed_out) {
        print_message("trace: %s\n", g_trace);
    }
    flows_free(); /* release before asserting so a failure leaks nothing */
    futoin_sync_free(m);
    assert_true(timed_out);
    assert_int_equal(c_entered, 1);
    assert_int_equal(c_enter_t, 60);
    assert_int_equal(inside, 0);
}

/* ---- addSync arguments and error handler ---- */

static void args_src(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs out = args0();
    out.arg0 = val_i32(7);
    out.arg1 = val_heap_str("seven");
    bsi->api->success(bsi, &out);
}

static void crit_args(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    trace("crit %d %s @%llu", args->arg0.type ? args->arg0.i32 : -1,
          args->arg1.type ? args->arg1.cstr : "-", now_ms());
    FutoInArgs out = args0();
    out.arg0 = val_i32(args->arg0.type ? args->arg0.i32 + 1 : -1);
    out.arg1 = val_heap_str("eight");
    bsi->api->success(bsi, &out);
}

static void args_dst(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    trace("dst %d %s", args->arg0.type ? args->arg0.i32 : -1,
          args->arg1.type ? args->arg1.cstr : "-");
}

static void sync_args_pass_through(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    g_heap_cleanups = 0;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, args_src, NULL);
    as->api->addSync(as, m, NULL, crit_args, NULL);
    as->api->add(as, NULL, args_dst, NULL);
    run_root();
    assert_trace("crit 7 seven @0|dst 8 eight");
    assert_int_equal(g_heap_cleanups, 2);
    futoin_sync_free(m);
}

static void sync_args_pass_through_after_wait(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    g_heap_cleanups = 0;
    flows_init(m, 50);
    flow_start(&g_flows[0]);
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, args_src, NULL);
    as->api->addSync(as, m, NULL, crit_args, NULL);
    as->api->add(as, NULL, args_dst, NULL);
    run_root();
    assert_trace("A+0|A-50|crit 7 seven @50|dst 8 eight");
    assert_int_equal(g_heap_cleanups, 2);
    flows_free();
    futoin_sync_free(m);
}

static void sync_args_released_on_reject_and_cancel(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 1);
    g_heap_cleanups = 0;
    flows_init(m, HOLD_FOREVER);
    flow_start(&g_flows[0]); /* holds the mutex until freed */
    /* X: waits in the queue with saved args, then is cancelled */
    FutoInAsyncSteps* x = futoin_steps_new(g_fx.tool);
    x->api->add(x, NULL, args_src, NULL);
    x->api->addSync(x, m, NULL, crit_args, NULL);
    x->api->execute(x, NULL, on_unhandled);
    /* Y: rejected (queue full) with saved args */
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, args_src, NULL);
    as->api->addSync(as, m, NULL, crit_args, NULL);
    run_root();
    x->api->cancel(x);
    assert_trace("A+0|unhandled:DefenseRejected:Mutex queue limit");
    assert_int_equal(g_heap_cleanups, 2);
    x->api->free(x);
    flows_free();
    futoin_sync_free(m);
}

static void crit_oops(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    trace("crit");
    bsi->api->handle_error(bsi, "Oops", "oops info");
}

static void ueh_recover(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    trace("ueh:%s:%s", code, error_info(bsi));
    FutoInArgs out = args0();
    out.arg0 = val_i32(42);
    bsi->api->success(bsi, &out);
}

static void next_i32(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    trace("next %d", args->arg0.type ? args->arg0.i32 : -1);
}

static void sync_user_error_handler_recovers(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    flows_init(m, 0);
    flow_start_at(&g_flows[0], 10); /* max_queue 0: a leaked lock rejects it */
    FutoInAsyncSteps* as = g_fx.root;
    as->api->addSync(as, m, NULL, crit_oops, ueh_recover);
    as->api->add(as, NULL, next_i32, NULL);
    run_root();
    assert_trace("crit|ueh:Oops:oops info|next 42|A+10|A-10");
    flows_free();
    futoin_sync_free(m);
}

static void sync_user_error_handler_propagates(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    flows_init(m, 0);
    flow_start_at(&g_flows[0], 10);
    FutoInAsyncSteps* as = g_fx.root;
    as->api->addSync(as, m, "ueh", crit_oops, eh_trace);
    as->api->add(as, NULL, next_i32, NULL);
    run_root();
    assert_trace("crit|ueh:Oops|unhandled:Oops:oops info|A+10|A-10");
    flows_free();
    futoin_sync_free(m);
}

/* ---- Throttle ---- */

static void throttle_entry_times(void** state)
{
    (void)state;
    FutoInSync* t = futoin_throttle_new(g_fx.tool, 2, 100, FUTOIN_UNLIMITED);
    assert_non_null(t);
    flows_init(t, 0);
    for (int i = 0; i < 5; ++i) {
        flow_start(&g_flows[i]);
    }
    run_all();
    static const uint64_t expect[5] = {0, 0, 100, 100, 200};
    for (int i = 0; i < 5; ++i) {
        assert_int_equal(g_flows[i].entered, 1);
        assert_int_equal(g_flows[i].enter_t, expect[i]);
    }
    assert_trace("A+0|A-0|B+0|B-0|C+100|C-100|D+100|D-100|E+200|E-200");
    flows_free();
    futoin_sync_free(t);
}

static void throttle_queue_limit(void** state)
{
    (void)state;
    FutoInSync* t = futoin_throttle_new(g_fx.tool, 1, 100, 1);
    flows_init(t, 0);
    for (int i = 0; i < 3; ++i) {
        flow_start(&g_flows[i]);
    }
    run_all();
    assert_trace("A+0|A-0|C:DefenseRejected:Throttle queue limit|B+100|B-100");
    flows_free();
    futoin_sync_free(t);
}

static void throttle_cancel_waiting(void** state)
{
    (void)state;
    FutoInSync* t = futoin_throttle_new(g_fx.tool, 1, 100, 1);
    flows_init(t, 0);
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    flow_cancel_at(&g_flows[1], 10);
    flow_start_at(&g_flows[2], 20); /* rejected if B still occupied the queue */
    run_all();
    assert_trace("A+0|A-0|cancel:B|C+100|C-100");
    assert_int_equal(g_flows[1].entered, 0);
    flows_free();
    futoin_sync_free(t);
}

static void throttle_idle_does_not_keep_run_alive(void** state)
{
    (void)state;
    FutoInSync* t = futoin_throttle_new(g_fx.tool, 1, 100, FUTOIN_UNLIMITED);
    flows_init(t, 0);
    /* never used: nothing to run */
    run_all();
    assert_int_equal(now_ms(), 0);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    /* used once: at most the current period is waited out */
    flow_start(&g_flows[0]);
    run_all();
    assert_trace("A+0|A-0");
    assert_true(now_ms() <= 100);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    /* and after that period it is idle again */
    run_all();
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    flows_free();
    futoin_sync_free(t);
}

/* try_enter(): an entry counted now, as lock() without waiting would;
 * never past max, never ahead of a waiting flow; only a Throttle */
static void throttle_try_enter_counts_like_lock(void** state)
{
    (void)state;
    FutoInSync* t = futoin_throttle_new(g_fx.tool, 2, 100, FUTOIN_UNLIMITED);
    flows_init(t, 0);
    assert_int_equal(futoin_throttle_try_enter(t), 1);
    assert_int_equal(futoin_sync_timer_pending(t), 1); /* the period counts */
    assert_int_equal(futoin_throttle_try_enter(t), 1);
    assert_int_equal(futoin_throttle_try_enter(t), 0); /* full */
    flow_start(&g_flows[0]);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(g_flows[0].entered, 0); /* waits for the next period */
    run_all();
    assert_int_equal(g_flows[0].entered, 1);
    assert_int_equal(g_flows[0].enter_t, 100);
    assert_int_equal(futoin_throttle_try_enter(t), 1); /* a new period */
    flows_free();
    futoin_sync_free(t);
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    assert_int_equal(futoin_throttle_try_enter(m), 0);
    futoin_sync_free(m);
    assert_int_equal(futoin_throttle_try_enter(NULL), 0);
}

/* the period timer runs only while a period counts entries */
static void throttle_timer_pending_while_a_period_counts(void** state)
{
    (void)state;
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.rate = 1;
    o.period_ms = 100;
    FutoInSync* syncs[2] = {
            futoin_throttle_new(g_fx.tool, 1, 100, FUTOIN_UNLIMITED),
            futoin_limiter_new(g_fx.tool, &o),
    };
    for (int i = 0; i < 2; ++i) {
        FutoInSync* t = syncs[i];
        assert_non_null(t);
        flows_init(t, 0);
        assert_int_equal(futoin_sync_timer_pending(t), 0);
        flow_start(&g_flows[0]);
        futoin_tool_iterate(g_fx.tool, 0); /* entered: the period counts */
        assert_int_equal(g_flows[0].entered, 1);
        assert_int_equal(futoin_sync_timer_pending(t), 1);
        run_all();
        assert_int_equal(futoin_sync_timer_pending(t), 0);
        flows_free();
        futoin_sync_free(t);
        trace_reset();
    }
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    assert_int_equal(futoin_sync_timer_pending(m), 0);
    futoin_sync_free(m);
    assert_int_equal(futoin_sync_timer_pending(NULL), 0);
}

/* a host's hook takes the periods (a test's fake clock): no timer of the
 * tool runs them; futoin_sync_period_end() ends each, and says when none
 * runs any more; a hook that declines leaves them to the tool */
static int g_hook_calls;
static uint32_t g_hook_ms;
static int g_hook_takes;

static int period_hook(void* data, FutoInSync* sync, uint32_t period_ms)
{
    assert_ptr_equal(data, sync); /* the object it was set on, a Limiter too */
    ++g_hook_calls;
    g_hook_ms = period_ms;
    return g_hook_takes;
}

static void throttle_periods_on_the_hosts_timer(void** state)
{
    (void)state;
    FutoInSync* syncs[2] = {
            futoin_throttle_new(g_fx.tool, 1, 100, FUTOIN_UNLIMITED),
            limiter_new(3, 3, 1, 100, 3),
    };
    for (int i = 0; i < 2; ++i) {
        FutoInSync* t = syncs[i];
        assert_int_equal(futoin_sync_set_period_hook(t, period_hook, t), 0);
        g_hook_calls = 0;
        g_hook_takes = 1;
        const uint64_t t0 = now_ms();
        flows_init(t, 0);
        flow_start(&g_flows[0]);
        flow_start(&g_flows[1]);
        run_all();
        assert_int_equal(g_hook_calls, 1);
        assert_int_equal(g_hook_ms, 100);
        assert_int_equal(g_flows[0].entered, 1);
        assert_int_equal(g_flows[1].entered, 0); /* no timer of the tool ends the period */
        assert_int_equal(now_ms(), t0);
        assert_int_equal(futoin_sync_timer_pending(t), 1);
        assert_int_equal(futoin_sync_period_end(t), 1); /* B goes in: another period */
        run_all();
        assert_int_equal(g_flows[1].entered, 1);
        assert_int_equal(futoin_sync_period_end(t), 0); /* idle */
        assert_int_equal(futoin_sync_timer_pending(t), 0);
        assert_int_equal(futoin_sync_period_end(t), 0); /* none is the host's */
        assert_int_equal(g_hook_calls, 1);
        /* declined: the tool's timer, as without a hook */
        g_hook_takes = 0;
        flow_start(&g_flows[2]);
        flow_start(&g_flows[3]);
        run_all();
        assert_int_equal(g_hook_calls, 2);
        assert_int_equal(g_flows[3].entered, 1);
        assert_int_equal(g_flows[3].enter_t, t0 + 100);
        flows_free();
        futoin_sync_free(t);
        trace_reset();
    }
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, 0);
    assert_int_equal(futoin_sync_set_period_hook(m, period_hook, m), -1);
    futoin_sync_free(m);
    assert_int_equal(futoin_sync_set_period_hook(NULL, period_hook, NULL), -1);
    assert_int_equal(futoin_sync_period_end(NULL), 0);
}

/* ---- Limiter ---- */

static void limiter_options_and_concurrency(void** state)
{
    (void)state;
    FutoInLimiterOptions o;
    memset(&o, 0xA5, sizeof(o));
    futoin_limiter_options_init(&o);
    assert_int_equal(o.concurrent, 1);
    assert_int_equal(o.max_queue, 0);
    assert_int_equal(o.rate, 1);
    assert_int_equal(o.period_ms, 1000);
    assert_int_equal(o.burst, 0);
    o.concurrent = 2;
    o.max_queue = 10;
    o.rate = 100;
    o.period_ms = 100;
    o.burst = 10;
    FutoInSync* l = futoin_limiter_new(g_fx.tool, &o);
    assert_non_null(l);
    flows_init(l, 50);
    for (int i = 0; i < 4; ++i) {
        flow_start(&g_flows[i]);
    }
    run_all();
    assert_int_equal(g_max_inside, 2);
    assert_int_equal(g_flows[0].enter_t, 0);
    assert_int_equal(g_flows[1].enter_t, 0);
    assert_int_equal(g_flows[2].enter_t, 50);
    assert_int_equal(g_flows[3].enter_t, 50);
    for (int i = 0; i < 4; ++i) {
        assert_int_equal(g_flows[i].entered, 1);
    }
    flows_free();
    futoin_sync_free(l);
}

static void limiter_rate(void** state)
{
    (void)state;
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.concurrent = 10;
    o.max_queue = 10;
    o.rate = 2;
    o.period_ms = 100;
    o.burst = 10;
    FutoInSync* l = futoin_limiter_new(g_fx.tool, &o);
    flows_init(l, 0);
    for (int i = 0; i < 5; ++i) {
        flow_start(&g_flows[i]);
    }
    run_all();
    static const uint64_t expect[5] = {0, 0, 100, 100, 200};
    for (int i = 0; i < 5; ++i) {
        assert_int_equal(g_flows[i].entered, 1);
        assert_int_equal(g_flows[i].enter_t, expect[i]);
    }
    flows_free();
    futoin_sync_free(l);
}

static void limiter_mutex_queue_limit(void** state)
{
    (void)state;
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.concurrent = 1;
    o.max_queue = 0;
    o.rate = 10;
    o.period_ms = 100;
    FutoInSync* l = futoin_limiter_new(g_fx.tool, &o);
    flows_init(l, 0);
    g_flows[0].hold_ms = 50;
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    flow_start_at(&g_flows[2], 60);
    run_all();
    assert_trace("A+0|B:DefenseRejected:Mutex queue limit|A-50|C+60|C-60");
    flows_free();
    futoin_sync_free(l);
}

static void limiter_burst_limit_releases_mutex(void** state)
{
    (void)state;
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.concurrent = 1;
    o.max_queue = 0;
    o.rate = 1;
    o.period_ms = 100;
    o.burst = 0;
    FutoInSync* l = futoin_limiter_new(g_fx.tool, &o);
    flows_init(l, 0);
    flow_start(&g_flows[0]);
    flow_start_at(&g_flows[1], 10);
    /* C would get "Mutex queue limit" if B's rejection kept the mutex */
    flow_start_at(&g_flows[2], 20);
    flow_start_at(&g_flows[3], 150);
    run_all();
    assert_trace("A+0|A-0|B:DefenseRejected:Throttle queue limit|"
                 "C:DefenseRejected:Throttle queue limit|D+150|D-150");
    flows_free();
    futoin_sync_free(l);
}

static void limiter_cancel_in_throttle_releases_mutex(void** state)
{
    (void)state;
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.concurrent = 1;
    o.max_queue = 5;
    o.rate = 1;
    o.period_ms = 100;
    o.burst = 5;
    FutoInSync* l = futoin_limiter_new(g_fx.tool, &o);
    flows_init(l, 0);
    flow_start(&g_flows[0]); /* takes the only entry of the period */
    flow_start(&g_flows[1]); /* holds the mutex, waits in the throttle */
    flow_start(&g_flows[2]); /* waits in the mutex queue */
    flow_cancel_at(&g_flows[1], 10);
    run_all();
    assert_trace("A+0|A-0|cancel:B|C+100|C-100");
    assert_int_equal(g_flows[1].entered, 0);
    flows_free();
    futoin_sync_free(l);
}

/* ---- a foreign FutoInSync provider ---- */

#define MY_MAX_EVENTS 4

typedef struct my_sync
{
    FutoInSync iface;
    const char* name;
    int wait_ms; /* 0: acquired at once; >0: acquired later; <0: rejected */
    int locks;
    int unlocks;
    ptrdiff_t lock_rid[MY_MAX_EVENTS];
    ptrdiff_t unlock_rid[MY_MAX_EVENTS];
    FutoInAsyncSteps* pending;
    FutoInHandle timer;
} my_sync;

static void my_grant(void* data)
{
    my_sync* s = data;
    FutoInAsyncSteps* bsi = s->pending;
    s->pending = NULL;
    trace("%s.granted@%llu", s->name, now_ms());
    bsi->api->success(bsi, NULL);
}

static void my_lock_cancel(FutoInAsyncSteps* bsi, void* data)
{
    my_sync* s = data;
    if (s->pending) {
        s->pending = NULL;
        bsi->api->sched_cancel(bsi, &s->timer);
    }
    trace("%s.lock_cancel", s->name);
}

static void my_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    my_sync* s = (my_sync*)sync;
    if (s->locks < MY_MAX_EVENTS) {
        s->lock_rid[s->locks] = bsi->api->rootId(bsi);
    }
    ++s->locks;
    trace("%s.lock", s->name);
    if (s->wait_ms < 0) {
        bsi->api->handle_error(bsi, "Busy", "foreign busy");
        return;
    }
    if (s->wait_ms > 0) {
        bsi->api->waitExternal(bsi);
        bsi->api->setCancel(bsi, s, my_lock_cancel);
        s->pending = bsi;
        s->timer = bsi->api->sched_deferred(bsi, (uint32_t)s->wait_ms, s, my_grant);
    }
}

static void my_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    my_sync* s = (my_sync*)sync;
    if (s->unlocks < MY_MAX_EVENTS) {
        s->unlock_rid[s->unlocks] = bsi->api->rootId(bsi);
    }
    ++s->unlocks;
    trace("%s.unlock", s->name);
}

static const FutoInSyncAPI my_sync_api = {{{my_lock, my_unlock}}};

static ptrdiff_t g_flow_rid;

static void record_rid(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_flow_rid = bsi->api->rootId(bsi);
}

static void foreign_sync_immediate(void** state)
{
    (void)state;
    my_sync s = {.iface = {&my_sync_api}, .name = "s"};
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, record_rid, NULL);
    as->api->addSync(as, &s.iface, "crit", f_trace, NULL);
    as->api->add(as, "after", f_trace, NULL);
    run_root();
    assert_trace("s.lock|crit|s.unlock|after");
    assert_int_equal(s.locks, 1);
    assert_int_equal(s.unlocks, 1);
    assert_int_equal(s.lock_rid[0], g_flow_rid);
    assert_int_equal(s.unlock_rid[0], g_flow_rid);
}

static void foreign_sync_waiting_lock(void** state)
{
    (void)state;
    my_sync s = {.iface = {&my_sync_api}, .name = "s", .wait_ms = 30};
    g_heap_cleanups = 0;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, record_rid, NULL);
    as->api->add(as, NULL, args_src, NULL);
    as->api->addSync(as, &s.iface, NULL, crit_args, NULL);
    as->api->add(as, NULL, args_dst, NULL);
    run_root();
    assert_trace("s.lock|s.granted@30|crit 7 seven @30|s.unlock|dst 8 eight");
    assert_int_equal(s.locks, 1);
    assert_int_equal(s.unlocks, 1);
    assert_int_equal(s.lock_rid[0], g_flow_rid);
    assert_int_equal(s.unlock_rid[0], g_flow_rid);
    assert_int_equal(g_heap_cleanups, 2);
}

static void foreign_sync_parallel_rootids(void** state)
{
    (void)state;
    my_sync s = {.iface = {&my_sync_api}, .name = "s"};
    flows_init(&s.iface, 0);
    FutoInAsyncSteps* as = g_fx.root;
    ptrdiff_t root_rid = as->api->rootId(as);
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, &g_flows[0], flow_body, flow_eh);
    p->api->add(p, &g_flows[1], flow_body, flow_eh);
    run_root();
    assert_int_equal(s.locks, 2);
    assert_int_equal(s.unlocks, 2);
    assert_true(g_flows[0].rid != g_flows[1].rid);
    for (int i = 0; i < 2; ++i) {
        ptrdiff_t rid = g_flows[i].rid;
        assert_true(rid != root_rid);
        int nlock = 0;
        int nunlock = 0;
        for (int j = 0; j < 2; ++j) {
            nlock += s.lock_rid[j] == rid;
            nunlock += s.unlock_rid[j] == rid;
        }
        assert_int_equal(nlock, 1);
        assert_int_equal(nunlock, 1);
    }
}

static void foreign_sync_unlock_on_error_and_cancel(void** state)
{
    (void)state;
    my_sync s1 = {.iface = {&my_sync_api}, .name = "s1"};
    my_sync s2 = {.iface = {&my_sync_api}, .name = "s2"};
    flows_init(&s1.iface, 0);
    g_flows[0].fail = "E";
    g_flows[1].sync = &s2.iface;
    g_flows[1].hold_ms = HOLD_FOREVER;
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    flow_cancel_at(&g_flows[1], 10);
    run_all();
    assert_trace("s1.lock|A+0|A-0|s1.unlock|A:E:crit failed|"
                 "s2.lock|B+0|cancel:B|B:cancelled|s2.unlock");
    assert_int_equal(s1.locks, 1);
    assert_int_equal(s1.unlocks, 1);
    assert_int_equal(s2.locks, 1);
    assert_int_equal(s2.unlocks, 1);
    assert_int_equal(s1.unlock_rid[0], g_flows[0].rid);
    assert_int_equal(s2.unlock_rid[0], g_flows[1].rid);
    flows_free();
}

static void foreign_sync_lock_rejects(void** state)
{
    (void)state;
    my_sync s = {.iface = {&my_sync_api}, .name = "s", .wait_ms = -1};
    flows_init(&s.iface, 0);
    flow_start(&g_flows[0]);
    run_all();
    assert_trace("s.lock|A:Busy:foreign busy");
    assert_int_equal(g_flows[0].entered, 0);
    assert_int_equal(s.locks, 1);
    assert_int_equal(s.unlocks, 0);
    flows_free();
}

static void foreign_sync_cancel_while_locking(void** state)
{
    (void)state;
    my_sync s = {.iface = {&my_sync_api}, .name = "s", .wait_ms = 50};
    flows_init(&s.iface, 0);
    flow_start(&g_flows[0]);
    flow_cancel_at(&g_flows[0], 10);
    run_all();
    assert_trace("s.lock|cancel:A|s.lock_cancel");
    assert_int_equal(g_flows[0].entered, 0);
    assert_int_equal(s.locks, 1);
    assert_int_equal(s.unlocks, 0); /* never acquired: nothing to release */
    flows_free();
}

/* n flows start on `sync` and take their first turn */
static void flows_enter(FutoInSync* sync, int hold_ms, int n)
{
    flows_init(sync, hold_ms);
    for (int i = 0; i < n; ++i) {
        flow_start(&g_flows[i]);
    }
    futoin_tool_iterate(g_fx.tool, 0);
}

static void assert_stats(FutoInSync* sync, uint32_t inside, uint32_t mutex_waiting, uint32_t entries,
                         uint32_t throttle_waiting)
{
    FutoInSyncStats st;
    assert_int_equal(futoin_sync_stats(sync, &st), 0);
    assert_int_equal(st.inside, inside);
    assert_int_equal(st.mutex_waiting, mutex_waiting);
    assert_int_equal(st.entries, entries);
    assert_int_equal(st.throttle_waiting, throttle_waiting);
}

/* stats: who is inside and who waits, as futoin-asyncsteps shows in its
 * objects' fields (a Limiter: both parts); -1 for anything not built in */
static void sync_stats_show_who_is_inside_and_who_waits(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 2, FUTOIN_UNLIMITED);
    assert_stats(m, 0, 0, 0, 0);
    flows_enter(m, HOLD_FOREVER, 4);
    assert_stats(m, 2, 2, 0, 0);
    flows_free();
    assert_stats(m, 0, 0, 0, 0);
    futoin_sync_free(m);
    trace_reset();

    FutoInSync* t = futoin_throttle_new(g_fx.tool, 2, 100, FUTOIN_UNLIMITED);
    flows_enter(t, 0, 3);
    assert_stats(t, 0, 0, 2, 1);
    run_all();
    assert_stats(t, 0, 0, 0, 0);
    flows_free();
    futoin_sync_free(t);
    trace_reset();

    FutoInSync* l = limiter_new(2, FUTOIN_UNLIMITED, 3, 100, FUTOIN_UNLIMITED);
    flows_enter(l, HOLD_FOREVER, 4);
    assert_stats(l, 2, 2, 2, 0);
    flows_free();
    futoin_sync_free(l);

    FutoInSyncStats st;
    my_sync foreign = {.iface = {&my_sync_api}, .name = "foreign"};
    memset(&st, 0xff, sizeof(st));
    assert_int_equal(futoin_sync_stats(&foreign.iface, &st), -1);
    assert_int_equal(st.inside, 0); /* zeroed all the same */
    assert_int_equal(futoin_sync_stats(NULL, &st), -1);
    assert_int_equal(futoin_sync_stats(&foreign.iface, NULL), -1);
}

/* fail_waiting(): a flow waiting to enter fails there, its handler runs
 * now, and it leaves the queue: the place it waited for goes to the next */
static void fail_waiting_fails_a_flow_queued_at_a_mutex(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    flows_init(m, 50);
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    flow_start(&g_flows[2]);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_stats(m, 1, 2, 0, 0);
    assert_int_equal(futoin_steps_fail_waiting(g_flows[1].root, "Ext", "queued"), 1);
    assert_int_equal(futoin_steps_fail_waiting(g_flows[1].root, "Ext", "twice"), 0); /* failing already */
    run_all();
    assert_trace("A+0|B:Ext:queued|A-50|C+50|C-100");
    assert_stats(m, 0, 0, 0, 0);
    assert_int_equal(futoin_steps_fail_waiting(g_flows[1].root, "Ext", "done"), 0); /* idle */
    assert_int_equal(futoin_steps_fail_waiting(NULL, "Ext", NULL), 0);
    flows_free();
    futoin_sync_free(m);
}

/* ---- stderr of a run, for what the engine reports there ---- */

/* the flow's step: a timeout of 20 ms, then the section under f->sync */
static void timed_flow_body(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    flow* f = data;
    bsi->api->setTimeout(bsi, 20);
    bsi->api->addSync(bsi, f->sync, f, crit_hold, NULL);
}

/* The holder and its waiters all time out in one tick: the holder leaves
 * first and must not grant the lock to a waiter already failing (that
 * was a "success() after the step already failed" report on stderr) */
static void lock_not_granted_to_waiters_failing_in_the_same_tick(void** state)
{
    (void)state;
    FutoInSync* syncs[3] = {
            futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED),
            limiter_new(1, 2, 100, 1000, 0),
            futoin_throttle_new(g_fx.tool, 1, 20, FUTOIN_UNLIMITED),
    };
    for (int k = 0; k < 3; ++k) {
        flows_init(syncs[k], HOLD_FOREVER);
        stderr_capture();
        for (int i = 0; i < 3; ++i) {
            flow* f = &g_flows[i];
            f->root = futoin_steps_new(g_fx.tool);
            f->root->api->add(f->root, f, timed_flow_body, flow_eh);
            f->root->api->execute(f->root, f, on_unhandled);
        }
        run_all();
        assert_string_equal(stderr_captured(), "");
        assert_int_equal(g_inside, 0);
        assert_stats(syncs[k], 0, 0, 0, 0);
        flows_free();
        futoin_sync_free(syncs[k]);
        trace_reset();
    }
}

static void wait_silently(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->waitExternal(bsi);
}

/* a root whose sync step waits in its queue behind a first step */
static void queued_sync_start(flow* f)
{
    f->root = futoin_steps_new(g_fx.tool);
    assert_non_null(f->root);
    f->root->api->add(f->root, NULL, wait_silently, NULL);
    f->root->api->addSync(f->root, f->sync, f, crit_hold, NULL);
    f->root->api->execute(f->root, f, on_unhandled);
}

/* Freed while flows hold it, wait for it and have a sync step still queued:
 * it lives on until the last of them is done with it (was a use after free
 * in the unlock and in the waiter's cancel) */
static void sync_freed_while_in_use(FutoInSync* sync, const char* expected)
{
    flows_init(sync, HOLD_FOREVER);
    g_flows[3].hold_ms = 0;
    flow_start(&g_flows[0]);
    flow_start(&g_flows[1]);
    flow_start(&g_flows[2]);
    queued_sync_start(&g_flows[4]);
    futoin_tool_iterate(g_fx.tool, 0);
    futoin_sync_free(sync);
    flow_cancel_at(&g_flows[0], 10);
    flow_cancel_at(&g_flows[2], 20);
    flow_cancel_at(&g_flows[1], 25);
    flow_start_at(&g_flows[3], 30);
    flow_cancel_at(&g_flows[4], 40);
    run_all();
    assert_trace(expected);
    assert_int_equal(g_inside, 0);
    flows_free();
}

static void mutex_freed_while_in_use_lives_until_unused(void** state)
{
    (void)state;
    sync_freed_while_in_use(futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED),
                            "A+0|cancel:A|A:cancelled|B+10|cancel:C|cancel:B|B:cancelled|D+30|D-30|cancel:E");
}

static void limiter_freed_while_in_use_lives_until_unused(void** state)
{
    (void)state;
    sync_freed_while_in_use(limiter_new(1, 4, 100, 1000, 0),
                            "A+0|cancel:A|A:cancelled|B+10|cancel:C|cancel:B|B:cancelled|D+30|D-30|cancel:E");
}

static void throttle_freed_while_in_use_lives_until_unused(void** state)
{
    (void)state;
    sync_freed_while_in_use(futoin_throttle_new(g_fx.tool, 1, 1000, FUTOIN_UNLIMITED),
                            "A+0|cancel:A|A:cancelled|cancel:C|cancel:B|cancel:E|D+1000|D-1000");
}

/* A provider wrapping a built-in calls its lock()/unlock() directly (no
 * addSync() step names it): freed while one flow holds it and another
 * waits in its queue, it still lives until both are done (the waiter's
 * cancel wrote into the freed queue) */
static FutoInSync* g_direct;

static void direct_lock(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("lock:%s", (const char*)data);
    g_direct->api->lock(bsi, g_direct);
}

static void direct_hold(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("in:%s", (const char*)data);
    bsi->api->waitExternal(bsi);
}

static void direct_unlock(FutoInAsyncSteps* bsi, void* data)
{
    trace("unlock:%s", (const char*)data);
    g_direct->api->unlock(bsi, g_direct);
}

static void direct_user(FutoInAsyncSteps* root, const char* name)
{
    root->api->add(root, (void*)name, direct_lock, NULL);
    root->api->add(root, (void*)name, direct_hold, NULL);
    root->api->execute(root, NULL, NULL);
}

static void direct_hold_cancel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->setCancel(bsi, data, direct_unlock);
    direct_hold(bsi, data, args);
}

static void sync_freed_with_direct_users(FutoInSync* sync, const char* expected)
{
    g_direct = sync;
    FutoInAsyncSteps* a = futoin_steps_new(g_fx.tool);
    FutoInAsyncSteps* b = futoin_steps_new(g_fx.tool);
    a->api->add(a, "A", direct_lock, NULL);
    a->api->add(a, "A", direct_hold_cancel, NULL);
    a->api->execute(a, NULL, NULL);
    direct_user(b, "B");
    futoin_tool_iterate(g_fx.tool, 0);
    futoin_sync_free(sync);
    b->api->cancel(b); /* leaves the queue of the freed object */
    a->api->cancel(a); /* its cancel handler unlocks the freed object */
    futoin_tool_run(g_fx.tool);
    assert_trace(expected);
    a->api->free(a);
    b->api->free(b);
}

/* Direct users whose steps time out in the same turn (virtual time): the
 * holder's cancel unlocks, which drops the waiter (its flow fails there)
 * and lets the freed object go; the waiter's cancel then must not touch it
 * (it read the freed object). A direct Throttle holder keeps a freed
 * Throttle until its unlock() (it was freed at once). */
static void hold_until_timeout(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("in:%s", (const char*)data);
    bsi->api->setCancel(bsi, data, direct_unlock);
    bsi->api->setTimeout(bsi, 40);
    bsi->api->waitExternal(bsi);
}

static void lock_until_timeout(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("lock:%s", (const char*)data);
    g_direct->api->lock(bsi, g_direct);
    bsi->api->setTimeout(bsi, 50);
}

static void trace_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    trace("%s:%s", (const char*)data, code);
}

static void sync_freed_as_its_direct_users_time_out(FutoInSync* (*make)(FutoInAsyncTool*), int waiter,
                                                     const char* expected)
{
    trace_reset();
    FutoInAsyncTool* t = futoin_tool_new();
    futoin_tool_use_virtual_time(t);
    g_direct = make(t);
    FutoInAsyncSteps* a = futoin_steps_new(t);
    FutoInAsyncSteps* b = futoin_steps_new(t);
    a->api->add(a, "A", direct_lock, NULL);
    a->api->add(a, "A", hold_until_timeout, NULL);
    a->api->execute(a, "A", trace_error);
    futoin_tool_iterate_ready(t, 0);
    if (waiter) {
        b->api->add(b, "B", lock_until_timeout, NULL);
        b->api->execute(b, "B", trace_error);
        futoin_tool_iterate_ready(t, 0);
    }
    futoin_sync_free(g_direct);
    futoin_tool_advance(t, 200);
    futoin_tool_iterate(t, 0);
    futoin_tool_run(t);
    assert_trace(expected);
    a->api->free(a);
    b->api->free(b);
    futoin_tool_free(t);
}

static FutoInSync* make_mutex(FutoInAsyncTool* t)
{
    return futoin_mutex_new(t, 1, 10);
}

static FutoInSync* make_limiter(FutoInAsyncTool* t)
{
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.max_queue = 10;
    o.rate = 10;
    return futoin_limiter_new(t, &o);
}

static FutoInSync* make_throttle(FutoInAsyncTool* t)
{
    return futoin_throttle_new(t, 1, 1000, 10);
}

static void sync_freed_as_its_direct_users_time_out_in_one_turn(void** state)
{
    (void)state;
    sync_freed_as_its_direct_users_time_out(make_mutex, 1, "lock:A|in:A|lock:B|unlock:A|A:Timeout|B:Timeout");
    sync_freed_as_its_direct_users_time_out(make_limiter, 1, "lock:A|in:A|lock:B|unlock:A|A:Timeout|B:Timeout");
    sync_freed_as_its_direct_users_time_out(make_throttle, 0, "lock:A|in:A|unlock:A|A:Timeout");
}

static void mutex_freed_with_direct_users_lives_until_they_leave(void** state)
{
    (void)state;
    sync_freed_with_direct_users(futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED), "lock:A|in:A|lock:B|unlock:A");
}

static void limiter_freed_with_direct_users_lives_until_they_leave(void** state)
{
    (void)state;
    sync_freed_with_direct_users(limiter_new(1, 4, 100, 1000, 0), "lock:A|in:A|lock:B|unlock:A");
}

/* rootId() is unique in the process, not per tool: a Mutex shared by flows
 * of two tools took the first root of the second tool for a re-entry of
 * the first root of the first (both had id 1) and let both in */
static void hold_inside(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("in:%s", (const char*)data);
    bsi->api->waitExternal(bsi);
}

static void mutex_shared_by_flows_of_two_tools(void** state)
{
    (void)state;
    FutoInAsyncTool* t1 = futoin_tool_new();
    FutoInAsyncTool* t2 = futoin_tool_new();
    FutoInSync* m = futoin_mutex_new(t1, 1, FUTOIN_UNLIMITED);
    FutoInAsyncSteps* a = futoin_steps_new(t1);
    FutoInAsyncSteps* b = futoin_steps_new(t2);
    assert_true(a->api->rootId(a) != b->api->rootId(b));
    a->api->addSync(a, m, "A", hold_inside, NULL);
    b->api->addSync(b, m, "B", hold_inside, NULL);
    a->api->execute(a, NULL, NULL);
    b->api->execute(b, NULL, NULL);
    futoin_tool_run(t1);
    futoin_tool_run(t2);
    FutoInSyncStats st;
    futoin_sync_stats(m, &st);
    assert_int_equal(st.inside, 1);
    assert_int_equal(st.mutex_waiting, 1);
    assert_trace("in:A");
    a->api->free(a);
    b->api->free(b);
    futoin_sync_free(m);
    futoin_tool_free(t2);
    futoin_tool_free(t1);
}

/* futoin_sync_free() of a FutoInSync of another provider reads nothing but
 * its api (it read the kind field of a built-in one past the end) */
static void sync_free_foreign_reads_only_api(void** state)
{
    (void)state;
    FutoInSync* s = malloc(sizeof(FutoInSync));
    assert_non_null(s);
    *(const FutoInSyncAPI**)&s->api = &my_sync_api;
    stderr_capture();
    futoin_sync_free(s);
    assert_int_equal(futoin_sync_timer_pending(s), 0);
    assert_non_null(strstr(stderr_captured(), "not a sync object of this library"));
    free(s);
}

static void sync_free_null(void** state)
{
    (void)state;
    futoin_sync_free(NULL);
    assert_trace("");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(mutex_serializes_two_roots),
            T(mutex_max2_third_waits),
            T(mutex_reentrant_same_flow),
            T(mutex_parallel_branches_serialize),
            T(mutex_branch_does_not_inherit_lock),
            T(mutex_released_on_success),
            T(mutex_released_on_error),
            T(mutex_released_on_cancel),
            T(mutex_cancel_waiting_removes_waiter),
            T(mutex_queue_limit),
            T(mutex_max_queue_zero_rejects),
            T(mutex_released_on_root_free),
            T(mutex_timeout_while_waiting),
            T(mutex_timeout_same_tick_as_grant),
            T(sync_args_released_on_reject_and_cancel),
            T(sync_args_pass_through),
            T(sync_args_pass_through_after_wait),
            T(sync_user_error_handler_recovers),
            T(sync_user_error_handler_propagates),
            T(throttle_entry_times),
            T(throttle_queue_limit),
            T(throttle_cancel_waiting),
            T(throttle_idle_does_not_keep_run_alive),
            T(throttle_timer_pending_while_a_period_counts),
            T(throttle_periods_on_the_hosts_timer),
            T(throttle_try_enter_counts_like_lock),
            T(sync_stats_show_who_is_inside_and_who_waits),
            T(fail_waiting_fails_a_flow_queued_at_a_mutex),
            T(lock_not_granted_to_waiters_failing_in_the_same_tick),
            T(limiter_options_and_concurrency),
            T(limiter_rate),
            T(limiter_mutex_queue_limit),
            T(limiter_burst_limit_releases_mutex),
            T(limiter_cancel_in_throttle_releases_mutex),
            T(foreign_sync_immediate),
            T(foreign_sync_waiting_lock),
            T(foreign_sync_parallel_rootids),
            T(foreign_sync_unlock_on_error_and_cancel),
            T(foreign_sync_lock_rejects),
            T(foreign_sync_cancel_while_locking),
            T(mutex_freed_while_in_use_lives_until_unused),
            T(limiter_freed_while_in_use_lives_until_unused),
            T(throttle_freed_while_in_use_lives_until_unused),
            T(mutex_freed_with_direct_users_lives_until_they_leave),
            T(mutex_shared_by_flows_of_two_tools),
            T(sync_freed_as_its_direct_users_time_out_in_one_turn),
            T(limiter_freed_with_direct_users_lives_until_they_leave),
            T(sync_free_foreign_reads_only_api),
            T(sync_free_null),
            T(mutex_released_after_a_timeout_handler_in_the_next_event),
    };
    return cmocka_run_group_tests_name("sync", tests, NULL, NULL);
}
