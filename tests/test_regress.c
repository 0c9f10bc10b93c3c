/* Regression tests for bugs found in review; each names what went wrong. */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>

/* 1. free(root) from a cancel handler during an outside cancel() was lost */
static FutoInAsyncSteps* g_root;
static int g_cancelled;

static void free_root_on_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
    ++g_cancelled;
    g_root->api->free(g_root);
}

static void waits_with_cancel(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->setCancel(bsi, NULL, free_root_on_cancel);
}

static void free_in_cancel_handler_of_outside_cancel(void** state)
{
    (void)state;
    g_root = g_fx.root;
    g_fx.root = NULL; /* freed by the test */
    g_cancelled = 0;
    g_root->api->add(g_root, NULL, waits_with_cancel, NULL);
    g_root->api->execute(g_root, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    g_root->api->cancel(g_root);
    assert_int_equal(g_cancelled, 1);
    assert_false(g_root->api->isValid(g_root)); /* freed once cancel finished */
}

/* 2. a stale success() from another thread must not complete a reused slot */
static FutoInAsyncSteps* g_stale;
static int g_b1_result;

static void* stale_success_thread(void* arg)
{
    (void)arg;
    g_stale->api->success(g_stale, NULL);
    return NULL;
}

static void a_times_out(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    g_stale = bsi;
    bsi->api->setTimeout(bsi, 10);
}

static void a_handler_posts_stale(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("A:%s", code);
    pthread_t th;
    pthread_create(&th, NULL, stale_success_thread, NULL);
    pthread_join(th, NULL); /* the post is queued; A is about to end */
    bsi->api->success(bsi, NULL);
}

static void b1_waits(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("B1 %s", bsi == g_stale ? "reuses" : "new");
    bsi->api->setTimeout(bsi, 2000);
}

static void b1_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("B1:%s@%u", code, (unsigned)futoin_tool_now(g_fx.tool));
    g_b1_result = 1;
    bsi->api->success(bsi, NULL);
}

static void b_adds_b1(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->add(bsi, NULL, b1_waits, b1_eh);
}

static void stale_cross_thread_success_is_ignored(void** state)
{
    (void)state;
    g_fx.root->api->add(g_fx.root, NULL, a_times_out, a_handler_posts_stale);
    g_fx.root->api->add(g_fx.root, NULL, b_adds_b1, NULL);
    run_root();
    /* whether or not B1 got A's old slot, the stale success must not end it */
    assert_true(strstr(g_trace, "B1:Timeout@2010") != NULL);
}

/* 3. a step's timeout must not be lost when another error is pending */
static void fail_child(void* data)
{
    FutoInAsyncSteps* child = data;
    child->api->handle_error(child, "IOError", NULL);
}

static FutoInAsyncSteps* g_child;

static void child_waits(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    g_child = bsi;
    bsi->api->waitExternal(bsi);
}

static void child_recovers(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("child:%s", code);
    bsi->api->success(bsi, NULL);
}

static void parent_with_timeout(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->add(bsi, NULL, child_waits, child_recovers);
    bsi->api->add(bsi, "forever", f_wait, NULL);
}

static void set_fail_timer(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    /* the failing timer is set before the parent's timeout: same deadline */
    bsi->api->add(bsi, NULL, parent_with_timeout, eh_trace);
}

static void deferred_fail_then_timeout(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->sched_deferred(bsi, 10, &g_child, NULL);
}

static void fail_g_child(void* data)
{
    (void)data;
    fail_child(g_child);
}

static void parent(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->sched_deferred(bsi, 10, NULL, fail_g_child);
    bsi->api->setTimeout(bsi, 10);
    bsi->api->add(bsi, NULL, child_waits, child_recovers);
    bsi->api->add(bsi, "forever", f_wait, NULL);
}

static void timeout_not_lost_while_other_error_pending(void** state)
{
    (void)state;
    (void)set_fail_timer;
    (void)deferred_fail_then_timeout;
    g_fx.root->api->add(g_fx.root, "P", parent, eh_trace);
    run_root();
    assert_trace("child:IOError|forever|P:Timeout|unhandled:Timeout:");
}

/* 5. Throttle max 0 is taken as 1 (as documented), not a hang */
static void throttled(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
    trace("in@%u", (unsigned)futoin_tool_now(g_fx.tool));
}

static void throttle_max_zero_is_one(void** state)
{
    (void)state;
    FutoInSync* t = futoin_throttle_new(g_fx.tool, 0, 100, FUTOIN_UNLIMITED);
    FutoInAsyncSteps* other = futoin_steps_new(g_fx.tool);
    g_fx.root->api->addSync(g_fx.root, t, NULL, throttled, NULL);
    other->api->addSync(other, t, NULL, throttled, NULL);
    other->api->execute(other, NULL, NULL);
    run_root();
    assert_trace("in@0|in@100");
    other->api->free(other);
    futoin_sync_free(t);
}

/* deviation: no error handler runs once cancel() was requested */
static void cancel_root_in_cancel_handler(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
    trace("cancel handler");
    g_fx.root->api->cancel(g_fx.root);
}

static void fails_after_set_cancel(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->setCancel(bsi, NULL, cancel_root_in_cancel_handler);
    bsi->api->handle_error(bsi, "Boom", NULL);
}

static void no_error_handler_after_cancel_requested(void** state)
{
    (void)state;
    g_fx.root->api->add(g_fx.root, NULL, fails_after_set_cancel, eh_trace);
    run_root();
    assert_trace("cancel handler");
}


/* 4. a re-entrant Limiter lock cancelled before it took the mutex must not
 * give back the outer hold (concurrent=1 was broken) */
static FutoInSync* g_lim;
static int g_inside, g_max_inside;

static void lim_enter(void)
{
    if (++g_inside > g_max_inside) {
        g_max_inside = g_inside;
    }
}

static void lim_done(void* d)
{
    FutoInAsyncSteps* bsi = d;
    bsi->api->success(bsi, NULL);
}

static void lim_inner(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
}

static void lim_a_tail(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->sched_deferred(bsi, 5, bsi, lim_done);
    bsi->api->waitExternal(bsi);
}

static void lim_a_leave(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
    --g_inside;
}

static void lim_a(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    lim_enter();
    bsi->api->setTimeout(bsi, 3);
    bsi->api->addSync(bsi, g_lim, NULL, lim_inner, NULL); /* re-entrant */
}

static void lim_a_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    (void)code;
    bsi->api->add(bsi, NULL, lim_a_tail, NULL); /* still inside */
    bsi->api->add(bsi, NULL, lim_a_leave, NULL);
}

static void lim_b(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
    lim_enter();
    --g_inside;
}

static void limiter_reentrant_cancel_keeps_outer_hold(void** state)
{
    (void)state;
    futoin_tool_set_burst(g_fx.tool, 1);
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.max_queue = 10;
    o.rate = 100;
    o.burst = 10;
    g_lim = futoin_limiter_new(g_fx.tool, &o);
    g_inside = g_max_inside = 0;
    FutoInAsyncSteps* b = futoin_steps_new(g_fx.tool);
    g_fx.root->api->addSync(g_fx.root, g_lim, NULL, lim_a, lim_a_eh);
    b->api->addSync(b, g_lim, NULL, lim_b, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, NULL);
    b->api->execute(b, NULL, NULL);
    for (int i = 0; i < 200; ++i) {
        if (futoin_tool_iterate(g_fx.tool, 1) < 0) {
            break;
        }
        futoin_tool_advance(g_fx.tool, 1);
    }
    assert_int_equal(g_max_inside, 1);
    assert_int_equal(g_inside, 0);
    b->api->free(b);
    futoin_sync_free(g_lim);
}

/* 6. addSync steps that receive values allocate nothing in steady state */
static size_t g_allocs;
static void* counting_malloc(size_t n)
{
    ++g_allocs;
    return malloc(n);
}
static void* counting_realloc(void* p, size_t n)
{
    ++g_allocs;
    return realloc(p, n);
}

static const FutoInType k_u32 = {FTN_TYPE_UINT32, NULL};

static void send_u32(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    FutoInArgs args = args0();
    args.arg0.type = &k_u32;
    args.arg0.u32 = 7;
    bsi->api->success(bsi, &args);
}

static FutoInSync* g_mutex6;

static void sync_body(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    (void)i;
    bsi->api->add(bsi, NULL, send_u32, NULL);
    bsi->api->addSync(bsi, g_mutex6, NULL, f_noop, NULL);
}

/* the allocations of a flow that repeats body n times */
static size_t run_repeat_loop(FutoInAsyncTool* t, size_t n, void (*body)(FutoInAsyncSteps*, void*, size_t))
{
    FutoInAsyncSteps* as = futoin_steps_new(t);
    size_t before = g_allocs;
    as->api->repeat(as, NULL, n, body, NULL);
    as->api->execute(as, NULL, NULL);
    futoin_tool_run(t);
    as->api->free(as);
    return g_allocs - before;
}

static void sync_with_args_allocates_nothing(void** state)
{
    (void)state;
    FutoInAllocator counting = {counting_malloc, counting_realloc, free};
    futoin_set_allocator(&counting);
    FutoInAsyncTool* t = futoin_tool_new();
    g_mutex6 = futoin_mutex_new(t, 1, FUTOIN_UNLIMITED);
    run_repeat_loop(t, 100, sync_body); /* warm up the pools */
    size_t small = run_repeat_loop(t, 1000, sync_body);
    size_t big = run_repeat_loop(t, 10000, sync_body);
    futoin_sync_free(g_mutex6);
    futoin_tool_free(t);
    futoin_set_allocator(NULL);
    assert_int_equal(small, big); /* nothing per step */
}

/* 7. setTimeout() on a waiting step from another thread is misuse: it was
 * reported by failing the flow from that thread, pushing to the loop's task
 * queue unsynchronised; now only reported */
static FutoInAsyncSteps* g_waiting;

static void* misuse_then_success_thread(void* arg)
{
    (void)arg;
    g_waiting->api->setTimeout(g_waiting, 100);
    g_waiting->api->success(g_waiting, NULL); /* the thread-safe slot */
    return NULL;
}

/* a step that waits, kept in g_waiting for another thread to complete */
static void keeps_waiting(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    g_waiting = bsi;
    bsi->api->waitExternal(bsi);
}

static void loop_only_slot_from_another_thread_is_only_reported(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, keeps_waiting, eh_trace);
    as->api->add(as, "after", f_trace, NULL);
    as->api->execute(as, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, misuse_then_success_thread, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("after");
}

/* 7a. the same while the step's callback still runs on the loop thread: an
 * add() from another thread went into the step unsynchronised (and its
 * sub-step replaced the waitExternal()), setCancel() and waitExternal()
 * wrote the step's fields; now reported and ignored */
static void c_trace(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    trace("%s", (const char*)data);
}

static void* build_from_thread(void* arg)
{
    FutoInAsyncSteps* bsi = arg;
    bsi->api->add(bsi, "added from a thread", f_trace, NULL);
    (void)bsi->api->parallel(bsi, NULL, NULL);
    bsi->api->repeat(bsi, NULL, 1, NULL, NULL);
    bsi->api->setTimeout(bsi, 1);
    bsi->api->setCancel(bsi, "cancel from a thread", c_trace);
    bsi->api->waitExternal(bsi);
    bsi->api->success(bsi, NULL); /* the thread-safe slot */
    return NULL;
}

static void waits_while_a_thread_builds(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->waitExternal(bsi);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, build_from_thread, bsi), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
}

static void a_thread_cannot_build_on_a_step_whose_callback_runs(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, waits_while_a_thread_builds, eh_trace);
    as->api->add(as, "after", f_trace, NULL);
    as->api->execute(as, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("after");
}

/* 7b. futoin_steps_new() and free() of roots from another thread raced with
 * the loop thread on the tool's pooled roots (the C++ reference's
 * instance_concurrent_inner makes and frees roots of one tool on two
 * threads at once). A root made there has memory of its own and then runs
 * on the loop thread as any root; a free() from there is posted */
static atomic_int g_churn_started;
static atomic_int g_churn_stop;
static FutoInAsyncSteps* g_remote_root;
static size_t g_remote_made;

static void* remote_roots_thread(void* arg)
{
    FutoInAsyncTool* t = arg;
    while (!atomic_load(&g_churn_started)) {
        /* the loop thread makes roots meanwhile */
    }
    for (int i = 0; i < 2000; ++i) {
        FutoInAsyncSteps* r = futoin_steps_new(t);
        if (!r) {
            break;
        }
        ++g_remote_made;
        r->api->free(r);
    }
    g_remote_root = futoin_steps_new(t);
    atomic_store(&g_churn_stop, 1);
    return NULL;
}

static void churn_roots_on_loop(void* data)
{
    size_t* made = data;
    atomic_store(&g_churn_started, 1);
    while (!atomic_load(&g_churn_stop)) {
        FutoInAsyncSteps* r = futoin_steps_new(g_fx.tool);
        assert_non_null(r);
        r->api->free(r);
        ++*made;
    }
}

static void roots_made_and_freed_on_another_thread(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    size_t loop_made = 0;
    g_remote_made = 0;
    g_fx.root->api->sched_immediate(g_fx.root, &loop_made, churn_roots_on_loop);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, remote_roots_thread, t), 0);
    assert_int_equal(futoin_tool_run(t), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(g_remote_made, 2000);
    assert_true(loop_made > 0);
    assert_non_null(g_remote_root);
    g_remote_root->api->add(g_remote_root, "remote", f_trace, NULL);
    g_remote_root->api->execute(g_remote_root, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(t), 0);
    assert_trace("remote");
    g_remote_root->api->free(g_remote_root);
}

/* 7c. the loop-thread-only slots from another thread on an idle root and
 * on the tool's scheduler: add() took steps from the loop thread's pool
 * unsynchronised (double frees), sched_immediate() its task queue (lost
 * callbacks); now each is reported and ignored */
static int g_sync_calls;

static void xsync_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    (void)sync;
    (void)bsi;
    ++g_sync_calls;
}

static void xsync_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    (void)sync;
    (void)bsi;
    ++g_sync_calls;
}

static const FutoInSyncAPI xsync_api = {.lock = xsync_lock, .unlock = xsync_unlock};
static FutoInSync g_xsync = {&xsync_api};

static void x_trace(void* data)
{
    trace("%s", (const char*)data);
}

static void x_body(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)bsi;
    trace("%s %zu", (const char*)data, i);
}

static void* misuse_idle_root_thread(void* arg)
{
    FutoInAsyncSteps* r = arg;
    r->api->add(r, "added from a thread", f_trace, NULL);
    FutoInAsyncSteps* p = r->api->parallel(r, NULL, NULL);
    p->api->add(p, "branch from a thread", f_trace, NULL);
    r->api->loop(r, "loop from a thread", c_trace, NULL);
    r->api->repeat(r, "repeat from a thread", 2, x_body, NULL);
    r->api->addSync(r, &g_xsync, "sync from a thread", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    return NULL;
}

/* the scheduler slots from another thread are posted, as the C++
 * reference's AsyncTool takes them from any thread (they were refused) */
static void* schedule_from_thread(void* arg)
{
    FutoInAsyncSteps* r = arg;
    FutoInHandle h1 = r->api->sched_immediate(r, "immediate from a thread", x_trace);
    FutoInHandle h2 = r->api->sched_deferred(r, 5, "deferred from a thread", x_trace);
    FutoInHandle h3 = r->api->sched_immediate(r, "cancelled from a thread", x_trace);
    FutoInHandle h4 = r->api->sched_deferred(r, 1, "cancelled deferred", x_trace);
    assert_true(r->api->sched_is_valid(r, &h1));
    assert_true(r->api->sched_is_valid(r, &h2));
    assert_true(r->api->sched_is_valid(r, &h3));
    r->api->sched_cancel(r, &h3);
    assert_false(r->api->sched_is_valid(r, &h3));
    assert_true(r->api->sched_is_valid(r, &h1));
    *(FutoInHandle*)r->api->stateVariable(r, NULL, "h4", NULL, NULL) = h4;
    return NULL;
}

/* room for the handles a test keeps in its root's state */
static void* alloc_handles(void* data)
{
    (void)data;
    return calloc(4, sizeof(FutoInHandle));
}

static void a_thread_schedules_on_the_tool(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    FutoInHandle* h4 = as->api->stateVariable(as, NULL, "h4", alloc_handles, state_free);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, schedule_from_thread, as), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    futoin_tool_iterate(g_fx.tool, 1); /* the posts: armed on the loop */
    assert_true(as->api->sched_is_valid(as, h4));
    as->api->sched_cancel(as, h4); /* armed: cancelled on the loop thread */
    assert_false(as->api->sched_is_valid(as, h4));
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("immediate from a thread|deferred from a thread");
}

static int g_seen_valid[5];

static void* cancel_from_thread(void* arg)
{
    FutoInAsyncSteps* r = arg;
    FutoInHandle* h = r->api->stateVariable(r, NULL, "handles", NULL, NULL);
    for (int i = 0; i < 2; ++i) {
        g_seen_valid[2 * i] = r->api->sched_is_valid(r, &h[i]);
        r->api->sched_cancel(r, &h[i]);
        g_seen_valid[2 * i + 1] = r->api->sched_is_valid(r, &h[i]);
    }
    r->api->sched_cancel(r, &h[3]); /* ran already: nothing to do */
    g_seen_valid[4] = r->api->sched_is_valid(r, &h[2]);
    return NULL;
}

/* handles the loop thread made, cancelled from another thread: they were
 * reported and kept (the C++ reference's AsyncTool::cancel() takes any
 * thread, as Python's Handle.cancel()) */
static void another_thread_cancels_what_the_loop_scheduled(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    FutoInHandle* h = as->api->stateVariable(as, NULL, "handles", alloc_handles, state_free);
    FutoInHandle ran = as->api->sched_immediate(as, "ran before", x_trace);
    futoin_tool_iterate(g_fx.tool, 1);
    h[0] = as->api->sched_immediate(as, "cancelled immediate", x_trace);
    h[1] = as->api->sched_deferred(as, 3600u * 1000u, "cancelled deferred", x_trace);
    h[2] = as->api->sched_immediate(as, "kept", x_trace);
    h[3] = ran;
    FutoInHandle copy = h[0];
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_from_thread, as), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    const int expect[5] = {1, 0, 1, 0, 1};
    assert_memory_equal(g_seen_valid, expect, sizeof(expect));
    assert_false(as->api->sched_is_valid(as, &copy));
    assert_true(as->api->sched_is_valid(as, &h[2]));
    futoin_tool_iterate(g_fx.tool, 0); /* the posts too: the hour's timer goes */
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("ran before|kept");
}

static void* schedule_an_hour_from_thread(void* arg)
{
    FutoInAsyncSteps* r = arg;
    FutoInHandle* h = r->api->stateVariable(r, NULL, "handles", NULL, NULL);
    h[0] = r->api->sched_deferred(r, 3600u * 1000u, "an hour from a thread", x_trace);
    return NULL;
}

static void* cancel_first_from_thread(void* arg)
{
    FutoInAsyncSteps* r = arg;
    FutoInHandle* h = r->api->stateVariable(r, NULL, "handles", NULL, NULL);
    r->api->sched_cancel(r, &h[0]);
    g_seen_valid[0] = r->api->sched_is_valid(r, &h[0]);
    return NULL;
}

/* a timer another thread set, armed on the loop, then cancelled from there:
 * it stayed armed until its deadline (run() waited for it) */
static void a_timer_another_thread_set_and_cancelled_does_not_linger(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    (void)as->api->stateVariable(as, NULL, "handles", alloc_handles, state_free);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, schedule_an_hour_from_thread, as), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    futoin_tool_iterate_ready(g_fx.tool, 0); /* armed on the loop (virtual time: not fired) */
    assert_true(futoin_tool_next_delay(g_fx.tool) > 0);
    g_seen_valid[0] = 1;
    assert_int_equal(pthread_create(&th, NULL, cancel_first_from_thread, as), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_false(g_seen_valid[0]);
    futoin_tool_iterate_ready(g_fx.tool, 0);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("");
}

/* cancels from another thread while the loop turns: each callback runs at
 * most once, none of the hour's timers fires, and every one of them leaves
 * the heap (run under ThreadSanitizer in CI) */
#define RACE_N 2000
static FutoInHandle g_race[4 * RACE_N];
static atomic_int g_race_ran[2 * RACE_N];
static atomic_int g_race_fired;
static atomic_int g_race_done;

static void race_immediate(void* data)
{
    atomic_fetch_add(&g_race_ran[(intptr_t)data], 1);
}

static void race_hour(void* data)
{
    (void)data;
    atomic_fetch_add(&g_race_fired, 1);
}

static void* race_canceller(void* arg)
{
    FutoInAsyncSteps* r = arg;
    /* this thread's own handles too: cancelled while posted or armed */
    for (intptr_t i = 0; i < RACE_N; ++i) {
        g_race[2 * RACE_N + 2 * i] = r->api->sched_immediate(r, (void*)(RACE_N + i), race_immediate);
        g_race[2 * RACE_N + 2 * i + 1] = r->api->sched_deferred(r, 3600u * 1000u, NULL, race_hour);
    }
    for (size_t i = 0; i < 4 * RACE_N; ++i) {
        r->api->sched_cancel(r, &g_race[i]);
    }
    atomic_store(&g_race_done, 1);
    return NULL;
}

static void cancels_from_another_thread_race_the_loop(void** state)
{
    (void)state;
    FutoInAsyncTool* tool = futoin_tool_new();
    FutoInAsyncSteps* r = futoin_steps_new(tool);
    for (intptr_t i = 0; i < RACE_N; ++i) {
        g_race[2 * i] = r->api->sched_immediate(r, (void*)i, race_immediate);
        g_race[2 * i + 1] = r->api->sched_deferred(r, 3600u * 1000u, NULL, race_hour);
    }
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, race_canceller, r), 0);
    while (!atomic_load(&g_race_done)) {
        futoin_tool_iterate(tool, 0);
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    futoin_tool_iterate(tool, 0); /* the last posts */
    for (size_t i = 0; i < 2 * RACE_N; ++i) {
        assert_in_range(atomic_load(&g_race_ran[i]), 0, 1);
    }
    assert_int_equal(atomic_load(&g_race_fired), 0);
    assert_int_equal(futoin_tool_next_delay(tool), -1);
    r->api->free(r);
    futoin_tool_free(tool);
}

static void a_thread_cannot_build_on_an_idle_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, misuse_idle_root_thread, as), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(as->api->isValid(as)); /* not executed from there */
    as->api->add(as, "loop thread", f_trace, NULL);
    run_root();
    assert_trace("loop thread");
    assert_int_equal(g_sync_calls, 0);
}

/* 8. out of memory copying an error code kept the previous code: a body's
 * error after a continueLoop() was read as LoopCont and the loop went on */
static int g_fail_allocs;

static void* failing_malloc(size_t n)
{
    return g_fail_allocs ? NULL : malloc(n);
}
static void* failing_realloc(void* p, size_t n)
{
    return g_fail_allocs ? NULL : realloc(p, n);
}

#define LONG_CODE "AnErrorCodeLongerThanTheBufferOfThirtyTwoBytes"

static void body8(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    trace("%zu", i);
    if (i == 0) {
        bsi->api->continueLoop(bsi, NULL);
        return;
    }
    g_fail_allocs = 1;
    bsi->api->handle_error(bsi, LONG_CODE, "x");
    g_fail_allocs = 0;
}

static void eh8(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("eh:%s", code);
    bsi->api->success(bsi, NULL);
}

static void outer8(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->repeat(bsi, NULL, 5, body8, NULL);
}

static void error_code_lost_to_oom_is_not_the_previous_one(void** state)
{
    (void)state;
    FutoInAllocator failing = {failing_malloc, failing_realloc, free};
    futoin_set_allocator(&failing);
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, outer8, eh8);
    as->api->execute(as, NULL, NULL);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    futoin_set_allocator(NULL);
    assert_trace("0|1|eh:" FUTOIN_ERR_INTERNAL_ERROR);
}

/* 9. success() from another thread while out of memory: the values it was
 * given were neither taken nor cleaned up */
static int g_taken9;

static void* success_oom_thread(void* arg)
{
    (void)arg;
    FutoInArgs args = args0();
    args.arg0 = val_heap_str("abc");
    g_fail_allocs = 1;
    g_waiting->api->success(g_waiting, &args);
    g_fail_allocs = 0;
    g_taken9 = args.arg0.type == NULL; /* taken, as on success */
    return NULL;
}

static void cross_thread_success_out_of_memory_cleans_values(void** state)
{
    (void)state;
    FutoInAllocator failing = {failing_malloc, failing_realloc, free};
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, keeps_waiting, NULL);
    as->api->execute(as, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    g_heap_cleanups = 0;
    futoin_set_allocator(&failing);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, success_oom_thread, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    futoin_set_allocator(NULL);
    assert_true(g_taken9);
    assert_int_equal(g_heap_cleanups, 1);
    as->api->cancel(as);
}

/* 10. a loop whose label could not be copied (out of memory) was added
 * without it: a break meant for it went past it */
#define LONG_LABEL "a-loop-label-long-enough-to-need-its-own-block-of-memory-beyond-the-small-pooled-blocks"

static void body10(FutoInAsyncSteps* bsi, void* d)
{
    (void)d;
    trace("body");
    bsi->api->breakLoop(bsi, LONG_LABEL);
}

static void loop_label_lost_to_oom_fails_the_flow(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "warm", f_trace, NULL); /* the step pool has room now */
    run_root();
    trace_reset();
    FutoInAllocator failing = {failing_malloc, failing_realloc, free};
    futoin_set_allocator(&failing);
    g_fail_allocs = 1;
    as->api->loop(as, NULL, body10, LONG_LABEL);
    g_fail_allocs = 0;
    futoin_set_allocator(NULL);
    run_root();
    assert_trace("unhandled:InternalError:loop(): out of memory for its label");
}

/* 13. a completion that comes after its step timed out (a worker's reply
 * late, from another thread or the loop thread) must not complete a later
 * step that the pool gave the same memory */
static FutoInAsyncSteps* g_late;
static int g_late_from_thread;

static void* late_success_thread(void* arg)
{
    (void)arg;
    g_late->api->success(g_late, NULL);
    return NULL;
}

static void late_success(void* data)
{
    (void)data;
    if (g_late_from_thread) {
        pthread_t th;
        pthread_create(&th, NULL, late_success_thread, NULL);
        pthread_join(th, NULL); /* posted: the loop takes it next */
    } else {
        late_success_thread(NULL);
    }
}

static int g_late_root_fails; /* the root's error ends the step (futoin_steps_fail_waiting), not a timeout */

static void late_root_error(void* data)
{
    (void)data;
    futoin_steps_fail_waiting(g_fx.root, "Timeout", NULL);
}

static void late_times_out(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    g_late = bsi;
    if (g_late_root_fails) {
        bsi->api->waitExternal(bsi);
        bsi->api->sched_deferred(bsi, 10, NULL, late_root_error);
    } else {
        bsi->api->setTimeout(bsi, 10);
    }
    bsi->api->sched_deferred(bsi, 100, NULL, late_success); /* the reply, late */
}

static void late_waits_own(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("wait");
    bsi->api->setTimeout(bsi, 300);
}

static void late_adds(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    for (int i = 0; i < 4; ++i) { /* steps enough to take any memory just freed */
        bsi->api->add(bsi, NULL, late_waits_own, NULL);
    }
}

static void late_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("%s@%u", code, (unsigned)futoin_tool_now(g_fx.tool));
    bsi->api->success(bsi, NULL);
}

static void late_completion_of_timed_out_step(int from_thread)
{
    g_late_from_thread = from_thread & 1;
    g_late_root_fails = from_thread >> 1;
    g_fx.root->api->add(g_fx.root, NULL, late_times_out, late_eh);
    g_fx.root->api->add(g_fx.root, NULL, late_adds, late_eh);
    run_root();
    assert_trace("Timeout@10|wait|Timeout@310");
}

static void late_success_from_thread_after_timeout_completes_no_other_step(void** state)
{
    (void)state;
    late_completion_of_timed_out_step(1);
}

static void late_success_on_loop_after_timeout_completes_no_other_step(void** state)
{
    (void)state;
    late_completion_of_timed_out_step(0);
}

static void late_success_after_the_root_failed_the_step_completes_no_other_step(void** state)
{
    (void)state;
    late_completion_of_timed_out_step(2 | 1);
}

/* 15. steps that ended waiting are set aside for FTN_REUSE_DELAY_MS of the
 * tool's time, which a virtual clock may never give: they piled up for
 * the life of the tool (a test suite's memory grew with every timeout) */
static void times_out(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->setTimeout(bsi, 0);
}

static void recovers(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    (void)code;
    bsi->api->success(bsi, NULL);
}

static void timeout_body(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    (void)i;
    bsi->api->add(bsi, NULL, times_out, recovers);
}

static void steps_set_aside_are_bounded_on_a_clock_that_stands(void** state)
{
    (void)state;
    FutoInAllocator counting = {counting_malloc, counting_realloc, free};
    futoin_set_allocator(&counting);
    FutoInAsyncTool* t = futoin_tool_new();
    futoin_tool_use_virtual_time(t);
    run_repeat_loop(t, 20000, timeout_body); /* fills what may be set aside */
    const uint64_t at = futoin_tool_now(t);
    size_t more = run_repeat_loop(t, 20000, timeout_body);
    assert_int_equal(futoin_tool_now(t), at); /* no time passed */
    futoin_tool_free(t);
    futoin_set_allocator(NULL);
    assert_int_equal(more, 0);
}

/* 14. a root freed from another thread after futoin_tool_free() (which
 * keeps the tool for its last roots): the free went to a loop that never
 * runs again, and the root, the post and the tool leaked (valgrind, LSan) */
static void* free_root_thread(void* arg)
{
    FutoInAsyncSteps* r = arg;
    r->api->free(r);
    return NULL;
}

static void root_freed_on_another_thread_after_tool_free(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    g_fx.root = NULL;
    stderr_capture();
    futoin_tool_free(g_fx.tool); /* reported: a root is not freed yet */
    g_fx.tool = NULL;
    assert_non_null(strstr(stderr_captured(), "not freed"));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, free_root_thread, r), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
}

/* 15. a tool whose loop ran on another thread, freed on this one with a
 * root this thread made and freed (Python: a Tool run on a worker thread,
 * its scheduling root made by immediate() from the main thread): the
 * root's free went to the loop thread, which never runs again, and the
 * drain in futoin_tool_free() posted it on, so the root was reported as
 * not freed and leaked */
static void* bind_tool_thread(void* arg)
{
    futoin_tool_bind_thread(arg);
    return NULL;
}

static void tool_freed_off_its_loop_thread_runs_the_frees_posted_to_it(void** state)
{
    (void)state;
    FutoInAsyncTool* t = futoin_tool_new();
    assert_non_null(t);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, bind_tool_thread, t), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    FutoInAsyncSteps* r = futoin_steps_new(t); /* made here: the loop is the other thread's */
    assert_non_null(r);
    r->api->free(r);
    stderr_capture();
    futoin_tool_free(t);
    assert_string_equal(stderr_captured(), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(free_in_cancel_handler_of_outside_cancel),
            T(stale_cross_thread_success_is_ignored),
            T(timeout_not_lost_while_other_error_pending),
            T(throttle_max_zero_is_one),
            T(no_error_handler_after_cancel_requested),
            T(limiter_reentrant_cancel_keeps_outer_hold),
            T(sync_with_args_allocates_nothing),
            T(loop_only_slot_from_another_thread_is_only_reported),
            T(a_thread_cannot_build_on_a_step_whose_callback_runs),
            T(roots_made_and_freed_on_another_thread),
            T(a_thread_cannot_build_on_an_idle_root),
            T(a_thread_schedules_on_the_tool),
            T(another_thread_cancels_what_the_loop_scheduled),
            T(a_timer_another_thread_set_and_cancelled_does_not_linger),
            cmocka_unit_test(cancels_from_another_thread_race_the_loop),
            T(error_code_lost_to_oom_is_not_the_previous_one),
            T(cross_thread_success_out_of_memory_cleans_values),
            T(loop_label_lost_to_oom_fails_the_flow),
            T(late_success_from_thread_after_timeout_completes_no_other_step),
            T(late_success_on_loop_after_timeout_completes_no_other_step),
            T(late_success_after_the_root_failed_the_step_completes_no_other_step),
            T(root_freed_on_another_thread_after_tool_free),
            T(tool_freed_off_its_loop_thread_runs_the_frees_posted_to_it),
            T(steps_set_aside_are_bounded_on_a_clock_that_stands),
    };
    return cmocka_run_group_tests_name("regress", tests, NULL, NULL);
}
