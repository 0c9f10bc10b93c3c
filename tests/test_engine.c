/* Engine rules, measured: constant C stack for 10^6 iterations and 20,000
 * nested levels, no heap allocation per step in steady state, bursts, and no
 * inline continuation on external completion. */
#include "helpers.h"

#include <pthread.h>

/* ---- run a test body on a thread with a small stack ---- */

typedef struct small_stack_job
{
    void (*fn)(void* arg);
    void* arg;
} small_stack_job;

static void* small_stack_entry(void* p)
{
    small_stack_job* job = p;
    job->fn(job->arg);
    return NULL;
}

static void run_on_small_stack(void (*fn)(void*), void* arg)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    assert_int_equal(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
    small_stack_job job = {fn, arg};
    pthread_t th;
    assert_int_equal(pthread_create(&th, &attr, small_stack_entry, &job), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&attr);
}

/* ---- 10^6 loop iterations ---- */

static void count_body(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)bsi;
    (void)i;
    ++*(size_t*)d;
}

static void million_iterations_job(void* arg)
{
    size_t* count = arg;
    FutoInAsyncTool* t = futoin_tool_new();
    FutoInAsyncSteps* as = futoin_steps_new(t);
    as->api->repeat(as, count, 1000000, count_body, NULL);
    as->api->execute(as, NULL, NULL);
    futoin_tool_run(t);
    as->api->free(as);
    futoin_tool_free(t);
}

static void million_iterations_constant_stack(void** state)
{
    (void)state;
    size_t count = 0;
    run_on_small_stack(million_iterations_job, &count);
    assert_int_equal(count, 1000000);
}

static void loop_body_with_substep(FutoInAsyncSteps* bsi, void* d)
{
    size_t* n = d;
    if (++*n == 1000000) {
        bsi->api->breakLoop(bsi, NULL);
        return;
    }
    bsi->api->add(bsi, NULL, f_noop, NULL);
}

static void million_loop_with_substeps_job(void* arg)
{
    FutoInAsyncTool* t = futoin_tool_new();
    FutoInAsyncSteps* as = futoin_steps_new(t);
    as->api->loop(as, arg, loop_body_with_substep, NULL);
    as->api->execute(as, NULL, NULL);
    futoin_tool_run(t);
    as->api->free(as);
    futoin_tool_free(t);
}

static void million_loop_iterations_with_substeps(void** state)
{
    (void)state;
    size_t n = 0;
    run_on_small_stack(million_loop_with_substeps_job, &n);
    assert_int_equal(n, 1000000);
}

/* ---- 20,000 nested levels ---- */

typedef struct nest
{
    size_t depth;
    size_t max;
    size_t cancels;
    int fail;
    int wait;
} nest;

static void nest_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    ++((nest*)data)->cancels;
}

static void nest_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    nest* n = d;
    if (++n->depth < n->max) {
        bsi->api->add(bsi, n, nest_step, NULL);
        return;
    }
    if (n->fail) {
        bsi->api->handle_error(bsi, "Deep", NULL);
    } else if (n->wait) {
        bsi->api->setCancel(bsi, n, nest_cancel);
    }
}

static void nest_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("%s", code);
    bsi->api->success(bsi, NULL);
}

static void nested_job(void* arg)
{
    nest* n = arg;
    FutoInAsyncTool* t = futoin_tool_new();
    FutoInAsyncSteps* as = futoin_steps_new(t);
    as->api->add(as, n, nest_step, n->fail ? nest_eh : NULL);
    as->api->execute(as, NULL, NULL);
    futoin_tool_run(t);
    if (n->wait) {
        as->api->cancel(as); /* unwinds 20,000 levels */
    }
    as->api->free(as);
    futoin_tool_free(t);
}

static void nested_levels_constant_stack(void** state)
{
    (void)state;
    nest n = {0, 20000, 0, 0, 0};
    run_on_small_stack(nested_job, &n);
    assert_int_equal(n.depth, 20000);
}

static void nested_levels_error_unwinds(void** state)
{
    (void)state;
    nest n = {0, 20000, 0, 1, 0};
    run_on_small_stack(nested_job, &n);
    assert_int_equal(n.depth, 20000);
    assert_trace("Deep");
}

static void nested_levels_cancel(void** state)
{
    (void)state;
    nest n = {0, 20000, 0, 0, 1};
    run_on_small_stack(nested_job, &n);
    assert_int_equal(n.cancels, 1);
}

/* ---- no heap allocation per step in steady state ---- */

static size_t g_mallocs;
static void* count_malloc(size_t n)
{
    ++g_mallocs;
    return malloc(n);
}
static void* count_realloc(void* p, size_t n)
{
    ++g_mallocs;
    return realloc(p, n);
}

static void seq_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    FutoInArgs args = args0();
    args.arg0 = val_i32(a->arg0.type ? a->arg0.i32 + 1 : 0);
    bsi->api->success(bsi, &args);
}

static void rep_sub(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    (void)i;
    bsi->api->add(bsi, NULL, seq_step, NULL);
}

static void fail_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->handle_error(bsi, "Recoverable", "some info");
}

static void recover(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    (void)code;
    bsi->api->success(bsi, NULL);
}

static void build_workload(FutoInAsyncSteps* as)
{
    for (int i = 0; i < 1000; ++i) {
        as->api->add(as, NULL, seq_step, NULL);
    }
    as->api->repeat(as, NULL, 1000, rep_sub, NULL);
    for (int i = 0; i < 100; ++i) {
        as->api->add(as, NULL, fail_step, recover);
    }
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    for (int i = 0; i < 50; ++i) {
        p->api->add(p, NULL, seq_step, NULL);
    }
}

static void no_allocation_in_steady_state(void** state)
{
    (void)state;
    FutoInAllocator counting = {count_malloc, count_realloc, free};
    futoin_set_allocator(&counting);
    FutoInAsyncTool* t = futoin_tool_new();
    for (int round = 0; round < 3; ++round) {
        FutoInAsyncSteps* as = futoin_steps_new(t);
        size_t before = g_mallocs;
        build_workload(as);
        as->api->execute(as, NULL, NULL);
        futoin_tool_run(t);
        as->api->free(as);
        if (round == 2) {
            /* warmed up: thousands of steps, errors and branches, no malloc */
            assert_int_equal(g_mallocs - before, 0);
        }
    }
    futoin_tool_free(t);
    futoin_set_allocator(NULL);
}

/* ---- bursts and fairness ---- */

static void burst_limits_one_flow_turn(void** state)
{
    (void)state;
    futoin_tool_set_burst(g_fx.tool, 2);
    FutoInAsyncSteps* b = futoin_steps_new(g_fx.tool);
    static const char* an[] = {"a1", "a2", "a3", "a4"};
    static const char* bn[] = {"b1", "b2", "b3", "b4"};
    for (int i = 0; i < 4; ++i) {
        g_fx.root->api->add(g_fx.root, (void*)an[i], f_trace, NULL);
        b->api->add(b, (void*)bn[i], f_trace, NULL);
    }
    g_fx.root->api->execute(g_fx.root, NULL, NULL);
    b->api->execute(b, NULL, NULL);
    futoin_tool_run(g_fx.tool);
    assert_trace("a1|a2|b1|b2|a3|a4|b3|b4");
    b->api->free(b);
}

static void default_burst_is_100(void** state)
{
    (void)state;
    FutoInAsyncSteps* b = futoin_steps_new(g_fx.tool);
    size_t na = 0, nb = 0;
    g_fx.root->api->repeat(g_fx.root, &na, 300, count_body, NULL);
    b->api->add(b, "b-ran", f_trace, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, NULL);
    b->api->execute(b, NULL, NULL);
    (void)nb;
    /* one turn of each: root runs its burst, then b runs */
    futoin_tool_iterate(g_fx.tool, 1);
    assert_true(na > 0 && na < 300);
    size_t first_turn = na;
    futoin_tool_iterate(g_fx.tool, 1);
    assert_trace("b-ran");
    assert_int_equal(na, first_turn);
    futoin_tool_run(g_fx.tool);
    assert_int_equal(na, 300);
    /* a turn is the loop step plus 100 steps including iteration bodies */
    assert_true(first_turn >= 45 && first_turn <= 100);
    b->api->free(b);
}

/* ---- completion from outside never runs the next step inline ---- */

static int g_in_success;

static void ext_complete(void* data)
{
    FutoInAsyncSteps* bsi = data;
    g_in_success = 1;
    bsi->api->success(bsi, NULL);
    g_in_success = 0;
    trace("success returned");
}

static void waits(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_immediate(bsi, bsi, ext_complete);
}

static void next_checks(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
    assert_int_equal(g_in_success, 0);
    trace("next");
}

static void external_success_schedules_not_inline(void** state)
{
    (void)state;
    g_fx.root->api->add(g_fx.root, NULL, waits, NULL);
    g_fx.root->api->add(g_fx.root, NULL, next_checks, NULL);
    run_root();
    assert_trace("success returned|next");
}

static void on_done(FutoInAsyncSteps* root, void* data)
{
    trace("done:%s", (const char*)data);
    if (strcmp(data, "free") == 0) {
        root->api->free(root); /* inside its own flow's last moment */
    }
}

/* set_done(): called once after the last step of each successful run, not
 * on an unhandled error nor on cancel; the root may be freed in it */
static void done_callback_after_success_only(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    futoin_steps_set_done(r, on_done, "a");
    r->api->add(r, "s1", f_trace, NULL);
    r->api->add(r, "s2", f_trace, NULL);
    run_root();
    assert_trace("s1|s2|done:a");
    r->api->add(r, "again", f_trace, NULL);
    run_root();
    assert_trace("s1|s2|done:a|again|done:a");
    trace_reset();
    r->api->add(r, "MyError", f_fail, NULL);
    run_root();
    assert_trace("unhandled:MyError:info");
    trace_reset();
    r->api->add(r, "w", f_wait, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_run(g_fx.tool);
    r->api->cancel(r);
    futoin_tool_run(g_fx.tool);
    assert_trace("w");
    futoin_steps_set_done(r, NULL, NULL);
    r->api->add(r, "cleared", f_trace, NULL);
    run_root();
    assert_trace("w|cleared");
    /* freed inside the callback */
    trace_reset();
    FutoInAsyncSteps* x = futoin_steps_new(g_fx.tool);
    futoin_steps_set_done(x, on_done, "free");
    x->api->add(x, "x", f_trace, NULL);
    x->api->execute(x, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("x|done:free");
    /* bad input */
    futoin_steps_set_done(NULL, on_done, NULL);
}

static void on_cancelled(FutoInAsyncSteps* root, void* data)
{
    trace("cancelled:%s", (const char*)data);
    if (strcmp(data, "free") == 0) {
        root->api->free(root); /* inside: done once the teardown is over */
    }
}

static void cancel_trace(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
    trace("cancel handler");
}

static void wait_with_cancel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("%s", (const char*)data);
    bsi->api->setCancel(bsi, NULL, cancel_trace);
}

static void cancel_trace_unwinding(FutoInAsyncSteps* bsi, void* data)
{
    (void)data;
    const char* code = futoin_steps_unwinding(bsi);
    trace("cancel:%s", code ? code : "-");
}

static void wait_timed_with_cancel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    if (data) {
        bsi->api->setTimeout(bsi, 10);
    }
    bsi->api->setCancel(bsi, NULL, cancel_trace_unwinding);
}

/* futoin_steps_unwinding(): in a cancel handler an error's unwinding runs
 * (a Timeout), that error; in one a cancel() runs, NULL (the JS reference
 * shows the Timeout in state.last_exception there) */
static void cancel_handler_tells_the_error_it_unwinds(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "timed", wait_timed_with_cancel, eh_trace);
    run_root();
    assert_trace("cancel:Timeout|timed:Timeout|unhandled:Timeout:");
    trace_reset();
    r->api->add(r, NULL, wait_timed_with_cancel, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    r->api->cancel(r);
    assert_trace("cancel:-");
    assert_null(futoin_steps_unwinding(NULL));
    assert_null(futoin_steps_unwinding(r));
}

/* a branch failing cancels its waiting siblings: their cancel handlers are
 * told that branch's error, as the JS reference shows it in
 * state.last_exception there; a step timeout's too */
static void cancel_handler_of_a_sibling_tells_the_failed_branch_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, "par", eh_trace);
    p->api->add(p, NULL, wait_timed_with_cancel, NULL);
    p->api->add(p, "Boom", f_fail, NULL);
    run_root();
    assert_trace("cancel:Boom|par:Boom|unhandled:Boom:info");
    trace_reset();
    p = r->api->parallel(r, "par", eh_trace);
    p->api->add(p, NULL, wait_timed_with_cancel, NULL);
    p->api->add(p, "timed", wait_timed_with_cancel, NULL);
    run_root();
    assert_trace("cancel:Timeout|cancel:Timeout|par:Timeout|unhandled:Timeout:");
}

/* a step with a timeout that runs a parallel of two waiting branches */
static void timed_parallel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->setTimeout(bsi, 10);
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, NULL, wait_timed_with_cancel, NULL);
    p->api->add(p, NULL, wait_timed_with_cancel, NULL);
}

/* an error that unwinds through a parallel (an outer step's Timeout)
 * cancels its branches: their cancel handlers are told that error, as the
 * JS reference shows it in state.last_exception there */
static void cancel_handler_of_a_branch_tells_the_error_unwinding_its_parallel(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "outer", timed_parallel, eh_trace);
    run_root();
    assert_trace("cancel:Timeout|cancel:Timeout|outer:Timeout|unhandled:Timeout:");
}

static void cancel_trace_crossed(FutoInAsyncSteps* bsi, void* data)
{
    (void)data;
    trace("cancel:%d", futoin_steps_take_error_crossed(bsi));
}

static void wait_with_cancel_crossed(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->setCancel(bsi, NULL, cancel_trace_crossed);
}

static void eh_trace_crossed(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    trace("%s:%s:%d", (const char*)data, code, futoin_steps_take_error_crossed(bsi));
}

static void unhandled_crossed(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    trace("unhandled:%s:%d", code, futoin_steps_take_error_crossed(bsi));
}

/* take_error_crossed(): the first handler that an error out of a parallel
 * branch reaches is told so, once (the reference raises it anew on the
 * parallel step); not the branch's own handlers */
static void take_error_crossed_tells_the_first_handler_past_the_branch(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, "par", eh_trace_crossed);
    p->api->add(p, NULL, wait_with_cancel_crossed, NULL);
    p->api->add(p, NULL, wait_with_cancel_crossed, NULL);
    p->api->add(p, "Boom", f_fail, eh_trace_crossed);
    r->api->execute(r, NULL, unhandled_crossed);
    futoin_tool_run(g_fx.tool);
    assert_trace("Boom:Boom:0|cancel:1|cancel:0|par:Boom:0|unhandled:Boom:0");
    trace_reset();
    p = r->api->parallel(r, "par", eh_trace_crossed);
    p->api->add(p, "Boom", f_fail, NULL);
    r->api->execute(r, NULL, unhandled_crossed);
    futoin_tool_run(g_fx.tool);
    assert_trace("par:Boom:1|unhandled:Boom:0");
    trace_reset();
    p = r->api->parallel(r, NULL, NULL);
    p->api->add(p, "Boom", f_fail, NULL);
    r->api->execute(r, NULL, unhandled_crossed);
    futoin_tool_run(g_fx.tool);
    assert_trace("unhandled:Boom:1");
    assert_int_equal(futoin_steps_take_error_crossed(NULL), 0);
}

static void f_timed(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->setTimeout(bsi, 10);
}

static void cb_trace_imm(void* data)
{
    trace("%s", (const char*)data);
}

/* iterate_timers(): a branch's step timeout fails its parallel in the
 * timer's event (its handlers run there); other flows' ready work waits */
static void iterate_timers_runs_a_timeout_and_its_parallel_handlers_only(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, "par", eh_recover);
    p->api->add(p, NULL, f_timed, NULL);
    r->api->add(r, "next", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(t, 0);
    futoin_tool_iterate(t, 0); /* the branch starts */
    assert_int_equal(futoin_tool_next_delay(t), 10);
    r->api->sched_immediate(r, "other", cb_trace_imm);
    futoin_tool_advance(t, 10);
    futoin_tool_iterate_timers(t);
    assert_trace("par:Timeout");
    assert_int_equal(futoin_tool_run(t), 0);
    assert_trace("par:Timeout|other|next");
}

/* a step timing out, "next", a parallel of a branch timing out and one
 * waiting, "last" */
static void execute_timed_then_timed_branch(FutoInAsyncSteps* r)
{
    r->api->add(r, NULL, f_timed, eh_recover);
    r->api->add(r, "next", f_trace, NULL);
    FutoInAsyncSteps* p = r->api->parallel(r, "par", eh_recover);
    p->api->add(p, NULL, f_timed, NULL);
    p->api->add(p, NULL, f_wait, NULL);
    r->api->add(r, "last", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
}

/* after a step timeout's error handlers the steps after them wait for a
 * later turn, as the JS reference's timer callback runs the handlers and
 * its callImmediate() the rest; a branch's timeout reaches the parallel's
 * handler in the timer's event too (run_one(), a test scheduler's step) */
static void timeout_handlers_run_in_the_timer_turn_the_next_steps_later(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    execute_timed_then_timed_branch(r);
    futoin_tool_iterate(t, 0);
    assert_trace("");
    assert_int_equal(futoin_tool_take_deferred(t), 0);
    futoin_tool_iterate(t, 0); /* the clock moves to the deadline */
    assert_trace("recover:Timeout");
    assert_int_equal(futoin_tool_take_deferred(t), 1);
    assert_int_equal(futoin_tool_take_deferred(t), 0);
    futoin_tool_iterate(t, 0);
    assert_trace("recover:Timeout|next");
    futoin_tool_iterate(t, 0); /* the branches start */
    assert_trace("recover:Timeout|next|wait");
    assert_int_equal(futoin_tool_run_one(t), 1); /* the branch's deadline: one event */
    assert_trace("recover:Timeout|next|wait|par:Timeout");
    assert_int_equal(futoin_tool_take_deferred(t), 1);
    assert_int_equal(futoin_tool_run(t), 0);
    assert_trace("recover:Timeout|next|wait|par:Timeout|last");
}

/* each flow that left steps after a step timeout's handlers, in the order
 * it did, for a host that goes on with each in an event of its own; a
 * freed flow is off that list */
static void each_flow_left_steps_after_its_timeout_is_taken_in_order(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r[3];
    for (int i = 0; i < 3; ++i) {
        r[i] = i ? futoin_steps_new(t) : g_fx.root;
        r[i]->api->add(r[i], NULL, f_timed, eh_recover);
        r[i]->api->add(r[i], "next", f_trace, NULL);
        r[i]->api->execute(r[i], NULL, on_unhandled);
    }
    futoin_tool_iterate(t, 0);
    assert_null(futoin_tool_take_deferred_root(t));
    futoin_tool_iterate(t, 0); /* the clock moves to the deadline: three handlers */
    assert_trace("recover:Timeout|recover:Timeout|recover:Timeout");
    r[1]->api->free(r[1]);
    assert_ptr_equal(futoin_tool_take_deferred_root(t), r[0]);
    assert_ptr_equal(futoin_tool_take_deferred_root(t), r[2]);
    assert_null(futoin_tool_take_deferred_root(t));
    assert_int_equal(futoin_tool_take_deferred(t), 1);
    assert_int_equal(futoin_tool_run(t), 0);
    assert_trace("recover:Timeout|recover:Timeout|recover:Timeout|next|next");
    r[2]->api->free(r[2]);
}

static int g_owner_asked;
static int g_owner_taken;
static uint32_t g_owner_branch;

static int owns_burst_yes(void* ctx, FutoInAsyncSteps* root, uint32_t branch)
{
    ++g_owner_asked;
    return root == (FutoInAsyncSteps*)ctx && branch == 0;
}

static void burst_taken(void* ctx, FutoInAsyncSteps* root, uint32_t branch)
{
    assert_ptr_equal(root, ctx);
    ++g_owner_taken;
    g_owner_branch = branch;
}

/* the host says who owns the burst (the JS reference's g_burst_owner): the
 * steps after a step timeout's handlers of the owner run in the timer's
 * event too (here the main sequence owns it), also after the handlers of
 * its parallel that a branch's timeout failed; a turn of a strand of its
 * own takes the burst, a branch's first burst and a timeout's handlers do
 * not */
static void timeout_of_the_burst_owner_goes_on_in_the_timer_turn(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    g_owner_asked = 0;
    g_owner_taken = 0;
    futoin_tool_set_burst_owner(t, burst_taken, owns_burst_yes, r);
    execute_timed_then_timed_branch(r);
    futoin_tool_iterate(t, 0);
    assert_trace("");
    assert_int_equal(g_owner_taken, 1); /* its first turn */
    assert_int_equal(g_owner_branch, 0);
    assert_int_equal(futoin_tool_run_one(t), 1); /* the deadline: handlers and the steps after them */
    assert_int_equal(g_owner_asked, 1);
    assert_int_equal(g_owner_taken, 2); /* the owner goes on: the same one */
    assert_int_equal(futoin_tool_take_deferred(t), 0);
    assert_trace("recover:Timeout|next");
    futoin_tool_iterate(t, 0); /* the branches start: their parallel's burst */
    assert_trace("recover:Timeout|next|wait");
    assert_int_equal(g_owner_taken, 2);
    assert_int_equal(futoin_tool_run_one(t), 1); /* the branch's deadline: the parallel's handler, the owner goes on */
    assert_int_equal(g_owner_asked, 3); /* the branch's, then the main sequence's after the handler */
    assert_trace("recover:Timeout|next|wait|par:Timeout|last");
    assert_int_equal(futoin_tool_take_deferred(t), 0);
    assert_int_equal(g_owner_taken, 3); /* it goes on: the same one */
    assert_int_equal(g_owner_branch, 0);
    assert_int_equal(futoin_tool_run(t), 0);
    futoin_tool_set_burst_owner(t, NULL, NULL, NULL);
}

/* a branch's step: an inner parallel whose one branch times out; its
 * handler recovers */
static void f_inner_par_timed(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, "inner", eh_recover);
    p->api->add(p, NULL, f_timed, NULL);
}

/* a branch whose end a burst of handlers reaches (its inner parallel's
 * handler recovered from a step timeout) ends in a turn of its own, the
 * step after its parallel in the next: a branch of the JS reference is a
 * root whose last step tells its parallel */
static void branch_ended_by_handlers_ends_in_a_turn_of_its_own(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, "outer", NULL);
    p->api->add(p, NULL, f_inner_par_timed, NULL);
    r->api->add(r, "next", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(t, 0);
    futoin_tool_iterate(t, 0); /* the outer branch starts */
    futoin_tool_iterate(t, 0); /* the inner one */
    assert_int_equal(futoin_tool_next_delay(t), 10); /* it waits */
    futoin_tool_advance(t, 10);
    assert_int_equal(futoin_tool_run_one(t), 1); /* the deadline: the inner parallel's handler */
    assert_trace("inner:Timeout");
    assert_int_equal(futoin_tool_run_one(t), 1); /* the outer branch ends */
    assert_trace("inner:Timeout");
    assert_int_equal(futoin_tool_run(t), 0);
    assert_trace("inner:Timeout|next");
}

/* completed inside its own callback, then told to go on later */
static void f_done_deferred(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->success(bsi, NULL);
    assert_int_equal(futoin_steps_defer_after(bsi), 1);
}

/* defer_after(): the step completed in its callback, its flow goes on in a
 * later event (a host's completion from another flow's burst there) */
static void defer_after_goes_on_in_a_later_event(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_done_deferred, NULL);
    r->api->add(r, "next", f_trace, NULL);
    r->api->add(r, "last", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_steps_defer_after(r), 0);
    assert_int_equal(futoin_tool_run_one(t), 1);
    assert_trace("");
    assert_int_equal(futoin_tool_take_deferred(t), 1);
    assert_int_equal(futoin_tool_run_one(t), 1); /* the rest: a burst of its own */
    assert_trace("next|last");
    assert_int_equal(futoin_tool_run(t), 0);
}

static FutoInAsyncSteps* g_waiting_step;

static void f_wait_kept(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args);

/* a turn (one run_one() event) that reaches a parallel runs the first bursts
 * of its branches in that event, as the JS reference runs them inside the
 * parallel step; the step after the parallel comes with a later event */
static void run_one_turn_reaching_a_parallel_runs_its_branches(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_wait_kept, NULL);
    FutoInAsyncSteps* p = r->api->parallel(r, NULL, NULL);
    p->api->add(p, "b1", f_trace, NULL);
    p->api->add(p, "b2", f_trace, NULL);
    r->api->add(r, "last", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run_one(t), 1);
    assert_int_equal(futoin_steps_is_waiting(g_waiting_step), 1);
    g_waiting_step->api->success(g_waiting_step, NULL);
    assert_trace("");
    assert_int_equal(futoin_tool_run_one(t), 1);
    assert_trace("b1|b2");
    assert_int_equal(futoin_tool_run_one(t), 1);
    assert_trace("b1|b2|last");
    assert_int_equal(futoin_tool_run_one(t), 0);
}

static void f_wait_kept(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_waiting_step = bsi;
    assert_int_equal(futoin_steps_is_waiting(bsi), 0); /* its callback runs */
    bsi->api->waitExternal(bsi);
}

/* a branch that hops, then fails by its own step */
static void f_hop_then_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, NULL, f_wait_kept, NULL);
    bsi->api->add(bsi, "Fail", f_fail, NULL);
}

/* its handler traces the code and adds a step */
static void eh_trace_adds(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    trace("%s:%s", (const char*)data, code);
    bsi->api->add(bsi, "eh-step", f_trace, NULL);
}

/* a branch's error reaches the parallel's handler in the branch's event, and
 * what the handler adds comes with a later event, behind events queued
 * before: the reference raises the branch error on the parallel step from
 * outside (its error handler at once, the rest through callImmediate()) */
static void branch_error_runs_parallel_handler_in_its_event_the_added_steps_later(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, "par", eh_trace_adds);
    p->api->add(p, NULL, f_hop_then_fail, NULL);
    r->api->execute(r, NULL, on_unhandled);
    FutoInAsyncSteps* o = futoin_steps_new(t);
    assert_non_null(o);
    o->api->add(o, "other", f_trace, NULL);
    while (futoin_tool_run_one(t)) {
    }
    assert_int_equal(futoin_steps_is_waiting(g_waiting_step), 1);
    g_waiting_step->api->success(g_waiting_step, NULL);
    o->api->execute(o, NULL, on_unhandled); /* its event comes after the branch's */
    assert_int_equal(futoin_tool_run_one(t), 1);
    assert_trace("par:Fail");
    assert_int_equal(futoin_tool_run_one(t), 1);
    assert_trace("par:Fail|other");
    assert_int_equal(futoin_tool_run_one(t), 1);
    assert_trace("par:Fail|other|eh-step");
    assert_int_equal(futoin_tool_run_one(t), 0);
    o->api->free(o);
}

static FutoInAsyncSteps* g_kept[2];

static void f_wait_keep_i(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args);

/* waits, kept in g_kept[data], then traces "after<data>" */
static void f_wait_then_trace(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    const int i = (int)(intptr_t)data;
    bsi->api->add(bsi, data, f_wait_keep_i, NULL);
    bsi->api->add(bsi, i ? "after1" : "after0", f_trace, NULL);
}

static void f_wait_keep_i(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    g_kept[(intptr_t)data] = bsi;
    bsi->api->waitExternal(bsi);
}

/* execute_owed(): the strand its ticket was given to goes on, once, as the
 * reference's callImmediate() per completion; claim_queued() tickets the
 * strands queued otherwise (the step after a parallel that ended) */
static void execute_owed_runs_the_strand_of_its_ticket(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, NULL, NULL);
    p->api->add(p, (void*)(intptr_t)0, f_wait_then_trace, NULL);
    p->api->add(p, (void*)(intptr_t)1, f_wait_then_trace, NULL);
    r->api->add(r, "end", f_trace, NULL);
    assert_int_equal(futoin_steps_execute_owed(r, 1), 0); /* not running */
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(t, 0);
    futoin_tool_iterate(t, 0);
    assert_non_null(g_kept[0]);
    assert_non_null(g_kept[1]);
    assert_int_equal(futoin_steps_owed(g_kept[0]), 0);
    assert_int_equal(futoin_steps_claim_queued(r), 0); /* nothing queued */
    g_kept[1]->api->success(g_kept[1], NULL);
    const uint32_t t1 = futoin_steps_owed(g_kept[1]);
    g_kept[0]->api->success(g_kept[0], NULL);
    const uint32_t t0 = futoin_steps_owed(g_kept[0]);
    assert_true(t0 != 0 && t1 != 0 && t0 != t1);
    assert_int_equal(futoin_steps_claim_queued(r), 0); /* both have theirs */
    assert_int_equal(futoin_steps_execute_owed(r, 0), 0);
    assert_int_equal(futoin_steps_execute_owed(r, t0), 1);
    assert_trace("after0");
    assert_int_equal(futoin_steps_execute_owed(r, t0), 0); /* paid */
    assert_int_equal(futoin_steps_execute_owed(r, t1), 1);
    assert_trace("after0|after1");
    const uint32_t tm = futoin_steps_claim_queued(r); /* the step after the parallel */
    assert_true(tm != 0 && tm != t0 && tm != t1);
    assert_int_equal(futoin_steps_claim_queued(r), 0);
    assert_int_equal(futoin_steps_execute_owed(r, tm), 1);
    assert_trace("after0|after1|end");
    assert_int_equal(futoin_tool_run(t), 0);
    assert_int_equal(futoin_steps_execute_owed(NULL, tm), 0);
    assert_int_equal(futoin_steps_claim_queued(NULL), 0);
    assert_int_equal(futoin_steps_owed(NULL), 0);
}

/* waits, kept in g_kept[0], inside a plain step */
static void f_nested_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, (void*)(intptr_t)0, f_wait_keep_i, NULL);
}

/* only_ends_flow(): a waiting step whose completion only ends its flow (the
 * last thing on the main sequence, nested in plain steps only) */
static void only_ends_flow_tells_the_last_waiting_step(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_nested_wait, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(t, 0);
    assert_non_null(g_kept[0]);
    assert_int_equal(futoin_steps_only_ends_flow(g_kept[0]), 1);
    assert_int_equal(futoin_steps_only_ends_flow(r), 0);
    assert_int_equal(futoin_steps_only_ends_flow(NULL), 0);
    g_kept[0]->api->success(g_kept[0], NULL);
    assert_int_equal(futoin_tool_run(t), 0);
    /* a step after it, or a parallel around it: more than the end */
    g_kept[0] = NULL;
    r->api->add(r, NULL, f_nested_wait, NULL);
    r->api->add(r, "end", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(t, 0);
    assert_int_equal(futoin_steps_only_ends_flow(g_kept[0]), 0);
    g_kept[0]->api->success(g_kept[0], NULL);
    assert_int_equal(futoin_tool_run(t), 0);
    assert_trace("end");
    g_kept[0] = NULL;
    FutoInAsyncSteps* p = r->api->parallel(r, NULL, NULL);
    p->api->add(p, (void*)(intptr_t)0, f_wait_keep_i, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(t, 0);
    futoin_tool_iterate(t, 0); /* the branch starts in a turn of its own */
    assert_non_null(g_kept[0]);
    assert_int_equal(futoin_steps_only_ends_flow(g_kept[0]), 0);
    g_kept[0]->api->success(g_kept[0], NULL);
    assert_int_equal(futoin_tool_run(t), 0);
}

/* futoin_steps_is_waiting(): a step waiting for an event from outside, until
 * an error from outside reaches it (a host then drops a late completion) */
static void is_waiting_tells_a_step_that_waits_for_an_event(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_wait_kept, eh_trace);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(futoin_steps_is_waiting(g_waiting_step), 1);
    assert_int_equal(futoin_steps_is_waiting(r), 0);
    assert_int_equal(futoin_steps_is_waiting(NULL), 0);
    g_waiting_step->api->handle_error(g_waiting_step, "Outside", "");
    assert_int_equal(futoin_steps_is_waiting(g_waiting_step), 0);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("eh:Outside|unhandled:Outside:");
}

static void loop_body_waits(FutoInAsyncSteps* bsi, void* data)
{
    size_t* n = data;
    if (++*n == 3) {
        bsi->api->breakLoop(bsi, NULL);
        return;
    }
    g_waiting_step = bsi;
    bsi->api->waitExternal(bsi);
}

static void repeat_body_waits(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)data;
    (void)i;
    g_waiting_step = bsi;
    bsi->api->waitExternal(bsi);
}

/* a loop or repeat body waiting for an event is a waiting step too (a host
 * completes it as any other: an await() as the last step of a loop body) */
static void is_waiting_tells_a_loop_body_that_waits(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    size_t n = 0;
    r->api->loop(r, &n, loop_body_waits, NULL);
    r->api->repeat(r, NULL, 2, repeat_body_waits, NULL);
    r->api->add(r, "done", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    for (int i = 0; i < 4; ++i) {
        futoin_tool_iterate(g_fx.tool, 0);
        assert_int_equal(futoin_steps_is_waiting(g_waiting_step), 1);
        g_waiting_step->api->success(g_waiting_step, NULL);
        assert_int_equal(futoin_steps_is_waiting(g_waiting_step), 0);
    }
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_int_equal(n, 3);
    assert_trace("done");
}

static void f_sub_sees_parent(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
    trace("sub:%d:%d", futoin_steps_runs_substeps(g_waiting_step), futoin_steps_is_waiting(g_waiting_step));
}

static void eh_adds_step(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    trace("eh:%s", code);
    bsi->api->add(bsi, NULL, f_sub_sees_parent, NULL);
}

/* futoin_steps_runs_substeps(): the error handler of a waiting step that an
 * error from outside failed added steps: a late success() has nothing to
 * complete there */
static void runs_substeps_tells_a_step_its_handler_moved_on(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_wait_kept, eh_adds_step);
    r->api->add(r, "next", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(futoin_steps_runs_substeps(g_waiting_step), 0);
    g_waiting_step->api->handle_error(g_waiting_step, "Outside", "");
    assert_int_equal(futoin_steps_runs_substeps(r), 0);
    assert_int_equal(futoin_steps_runs_substeps(NULL), 0);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("eh:Outside|sub:1:0|next");
}

static void f_queued_in_callback(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    trace("cb:%d", futoin_steps_goes_on_later((FutoInAsyncSteps*)data));
}

/* futoin_steps_goes_on_later(): a running flow whose next step waits for a
 * later turn (its step completed from outside), not one that waits for an
 * event, runs a callback or is idle: the JS reference cancels such a flow
 * on an error raised on its root */
static void goes_on_later_tells_a_flow_completed_from_outside(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    assert_int_equal(futoin_steps_goes_on_later(r), 0); /* idle */
    r->api->add(r, NULL, f_wait_kept, NULL);
    r->api->add(r, r, f_queued_in_callback, NULL);
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_steps_goes_on_later(r), 1); /* its first turn is queued */
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(futoin_steps_goes_on_later(r), 0); /* waits for an event */
    g_waiting_step->api->success(g_waiting_step, NULL);
    assert_int_equal(futoin_steps_goes_on_later(r), 1);
    assert_int_equal(futoin_steps_goes_on_later(NULL), 0);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_int_equal(futoin_steps_goes_on_later(r), 0); /* ended */
    assert_trace("cb:0");
}

static void cancel_named(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    trace("cancel:%s", (const char*)data);
}

static void wait_kept_with_cancel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_waiting_step = bsi;
    bsi->api->setCancel(bsi, "inner", cancel_named);
    bsi->api->waitExternal(bsi);
}

/* a step with a cancel handler whose sub-step waits; data: a sub-step after it */
static void outer_waits_inside(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->setCancel(bsi, "outer", cancel_named);
    bsi->api->add(bsi, NULL, wait_kept_with_cancel, NULL);
    if (data) {
        bsi->api->add(bsi, data, f_trace, NULL);
    }
}

/* execute r, let its step wait, complete that step from outside, then cancel
 * the flow before its next turn */
static void cancel_after_outside_success(FutoInAsyncSteps* r)
{
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    g_waiting_step->api->success(g_waiting_step, NULL);
    r->api->cancel(r);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
}

/* A cancel right after a success() from outside calls no cancel handler of
 * the steps that success() ended: the waiting step and the enclosing steps
 * it left with nothing to run (the JS reference ends them inside that
 * success()). An enclosing step with sub-steps left still runs: its
 * handler is called. */
static void cancel_after_outside_success_spares_ended_steps(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, outer_waits_inside, NULL);
    r->api->add(r, "next", f_trace, NULL);
    cancel_after_outside_success(r);
    assert_trace("");
    r->api->add(r, "more", outer_waits_inside, NULL);
    cancel_after_outside_success(r);
    assert_trace("cancel:outer");
}

static void complete_waiting_step(void* data)
{
    (void)data;
    g_waiting_step->api->success(g_waiting_step, NULL);
}

/* a step with a 10 ms timeout whose sub-step waits */
static void outer_timed_waits_inside(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->setTimeout(bsi, 10);
    bsi->api->add(bsi, NULL, f_wait_kept, NULL);
}

/* A sub-step completed from outside at the very time its enclosing step
 * times out, the completion first: the completion ends the enclosing step
 * too (nothing left in it), its timeout no more fires, as in the JS
 * reference, where that success() ends it and clears its timer */
static void outside_success_ends_the_enclosing_step_before_its_timeout(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->sched_deferred(r, 10, NULL, complete_waiting_step); /* set before the step timeout */
    r->api->add(r, NULL, outer_timed_waits_inside, eh_trace);
    r->api->add(r, "next", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("next");
}

static void f_parallel_waits(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, NULL, f_wait_kept, NULL);
}

/* futoin_steps_in_branch(): a step of a parallel branch, not of the main
 * sequence (a root error() fails the parallel there, as in the JS reference) */
static void in_branch_tells_a_parallel_branch_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_wait_kept, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(futoin_steps_in_branch(g_waiting_step), 0);
    assert_int_equal(futoin_steps_in_branch(r), 0);
    assert_int_equal(futoin_steps_in_branch(NULL), 0);
    r->api->cancel(r);
    g_waiting_step = NULL;
    r->api->add(r, NULL, f_parallel_waits, NULL);
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_non_null(g_waiting_step);
    assert_int_equal(futoin_steps_in_branch(g_waiting_step), 1);
    r->api->cancel(r);
}

static FutoInAsyncSteps* g_outer_step;

/* a step whose sub-step waits (its handler recovers), then "after" */
static void outer_of_waiting_sub(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_outer_step = bsi;
    bsi->api->add(bsi, NULL, f_wait_kept, eh_recover);
    bsi->api->add(bsi, "after", f_trace, NULL);
}

/* fail_waiting() on a step of a parallel branch fails the step that branch
 * waits at, as the JS reference's error() on the branch's own root: the
 * branch recovers and the parallel goes on (on the root it fails the
 * parallel step) */
static void fail_waiting_on_a_branch_step_fails_that_branch(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, "par", eh_trace);
    p->api->add(p, NULL, outer_of_waiting_sub, NULL);
    p->api->add(p, "b2", f_trace, NULL);
    r->api->add(r, "last", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("b2");
    assert_int_equal(futoin_steps_fail_waiting(g_outer_step, "Ext", "branch"), 1);
    assert_int_equal(futoin_steps_fail_waiting(g_outer_step, "Ext", "twice"), 0); /* failing already */
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("b2|recover:Ext|after|last");
    assert_string_equal(error_info(r), "branch");
}

/* a new root with the hook (tag as its data), waiting in a step that traces
 * `name` and has a cancel handler */
static FutoInAsyncSteps* waiting_root(const char* tag, const char* name)
{
    FutoInAsyncSteps* r = futoin_steps_new(g_fx.tool);
    futoin_steps_set_cancelled(r, on_cancelled, (void*)tag);
    r->api->add(r, (void*)name, wait_with_cancel, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_run(g_fx.tool);
    return r;
}

/* set_cancelled(): called once when a running flow of the root is cancelled
 * (cancel(), free() of a running root), after its cancel handlers; not on
 * success, an unhandled error, nor a cancel() of an idle root */
static void cancelled_callback_on_cancel_only(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    futoin_steps_set_cancelled(r, on_cancelled, "a");
    r->api->add(r, "s1", f_trace, NULL);
    run_root();
    r->api->add(r, "MyError", f_fail, NULL);
    run_root();
    r->api->cancel(r); /* idle */
    assert_trace("s1|unhandled:MyError:info");
    trace_reset();
    r->api->add(r, "w", wait_with_cancel, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_run(g_fx.tool);
    r->api->cancel(r);
    r->api->cancel(r);
    assert_trace("w|cancel handler|cancelled:a");
    /* freed inside the callback */
    trace_reset();
    FutoInAsyncSteps* x = waiting_root("free", "x");
    x->api->cancel(x);
    assert_trace("x|cancel handler|cancelled:free");
    /* free() of a running root cancels it first */
    trace_reset();
    FutoInAsyncSteps* y = waiting_root("y", "y");
    y->api->free(y);
    assert_trace("y|cancel handler|cancelled:y");
    futoin_steps_set_cancelled(NULL, on_cancelled, NULL);
}

/* a step that traces its flow's host data, from a sub-step and a branch too */
static void trace_host_data(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* hd = futoin_steps_host_data(bsi);
    trace("%s:%s", (const char*)data, hd ? hd : "-");
}

static void host_data_outer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    trace_host_data(bsi, data, args);
    bsi->api->add(bsi, "sub", trace_host_data, NULL);
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, "branch", trace_host_data, NULL);
}

/* set_host_data(): one pointer per root that any step of its flow reads at
 * once (a wrapper's per-flow context); NULL before, for other roots, for a
 * foreign pointer, and once the root is reused */
static void host_data_is_per_root_and_seen_by_every_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    assert_null(futoin_steps_host_data(r));
    futoin_steps_set_host_data(r, "A");
    assert_string_equal(futoin_steps_host_data(r), "A");
    r->api->add(r, "outer", host_data_outer, NULL);
    FutoInAsyncSteps* other = futoin_steps_new(g_fx.tool);
    other->api->add(other, "other", trace_host_data, NULL);
    other->api->execute(other, NULL, on_unhandled);
    run_root();
    assert_trace("other:-|outer:A|sub:A|branch:A");
    futoin_steps_set_host_data(r, "B"); /* a new run, a new context */
    r->api->add(r, "again", trace_host_data, NULL);
    run_root();
    assert_trace("other:-|outer:A|sub:A|branch:A|again:B");
    other->api->free(other);
    r->api->free(r);
    g_fx.root = futoin_steps_new(g_fx.tool); /* the freed root's memory again */
    assert_null(futoin_steps_host_data(g_fx.root));
    FutoInAsyncSteps foreign = {NULL};
    assert_null(futoin_steps_host_data(&foreign));
    assert_null(futoin_steps_host_data(NULL));
    futoin_steps_set_host_data(NULL, "x"); /* bad input: reported, ignored */
}

static void execute_only_schedules(void** state)
{
    (void)state;
    g_fx.root->api->add(g_fx.root, "ran", f_trace, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, NULL);
    assert_trace("");
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 0);
    futoin_tool_run(g_fx.tool);
    assert_trace("ran");
}

/* ---- steps run by the host (futoin_tool_set_host_exec) ---- */

/* the host's marker callback: the engine must never call it */
static void f_host(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
    fail_msg("the engine called a host step itself");
}

static FutoInAsyncSteps* g_host_waiting;
static FutoInAsyncSteps* g_host_other;

/* a host: runs each taken step as its callback, by what its data says */
static void host_drain(void)
{
    void* data;
    const FutoInArgs* args;
    FutoInAsyncSteps* bsi;
    while ((bsi = futoin_tool_host_next(g_fx.tool, &data, &args))) {
        const char* what = data;
        trace("host:%s%s", what, args->arg0.type ? "+v" : "");
        if (!strcmp(what, "val")) {
            FutoInArgs out = {0};
            out.arg0.type = &t_i32;
            out.arg0.i32 = 7;
            bsi->api->success(bsi, &out);
        } else if (!strcmp(what, "fail")) {
            bsi->api->handle_error(bsi, "Fail", "i");
        } else if (!strcmp(what, "sub")) {
            bsi->api->add(bsi, "inner", f_trace, NULL);
        } else if (!strcmp(what, "wait")) {
            bsi->api->waitExternal(bsi);
            g_host_waiting = bsi;
        } else if (!strcmp(what, "nested")) {
            /* another root executed inside a host step: scheduled, not run */
            FutoInAsyncSteps* other = futoin_steps_new(g_fx.tool);
            other->api->add(other, "other", f_trace, NULL);
            other->api->execute(other, NULL, NULL);
            assert_int_equal(futoin_steps_execute_burst(other), 0);
            g_host_other = other;
        } else if (!strcmp(what, "cancel")) {
            g_fx.root->api->cancel(g_fx.root); /* inside the callback: deferred */
        }
        futoin_tool_host_done(bsi);
    }
}

/* the host's loop: the tool's turns, each followed by `drain`, until idle */
static void host_loop_with(void (*drain)(void))
{
    for (;;) {
        int64_t d = futoin_tool_iterate(g_fx.tool, 0);
        drain();
        if (d < 0 && futoin_tool_next_delay(g_fx.tool) < 0) {
            break;
        }
    }
}

static void host_run_all(void)
{
    host_loop_with(host_drain);
}

/* A branch failing while its sibling's host step waits to be taken: the
 * sibling left the host queue as it was torn down (the host took a freed
 * strand: a crash in Node with two root-level parallels) */
static void host_sibling_waiting_for_the_host_is_torn_down_cleanly(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p1 = r->api->parallel(r, NULL, NULL);
    p1->api->add(p1, "a", f_host, NULL);
    FutoInAsyncSteps* p2 = r->api->parallel(r, NULL, NULL);
    p2->api->add(p2, "fail", f_host, NULL);
    p2->api->add(p2, "b", f_host, NULL);
    p2->api->add(p2, "c", f_host, NULL);
    r->api->add(r, "never", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    host_run_all();
    assert_trace("host:a|host:fail|unhandled:Fail:i");
    assert_false(futoin_tool_host_pending(g_fx.tool));
}

/* a step with a cancel handler whose sub-steps are host steps: "h", or a
 * parallel of "cancel" and "b" when its data says "par" */
static void cancellable_host_sub(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->setCancel(bsi, NULL, cancel_trace);
    if (data && !strcmp(data, "par")) {
        FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
        p->api->add(p, "cancel", f_host, NULL);
        p->api->add(p, "b", f_host, NULL);
    } else {
        bsi->api->add(bsi, "h", f_host, NULL);
    }
}

/* A flow whose only business is a host step waiting to be taken is in no
 * callback: cancel() tears it down at once (its cancel handlers run, the
 * step leaves the host queue), not when the host gets to that step (a
 * Mutex stayed held behind a long host queue in Node) */
static void host_step_waiting_to_be_taken_is_cancelled_at_once(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, cancellable_host_sub, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_true(futoin_tool_host_pending(g_fx.tool));
    r->api->cancel(r);
    assert_trace("cancel handler");
    assert_false(futoin_tool_host_pending(g_fx.tool));
    host_run_all();
    assert_trace("cancel handler");
}

/* cancel() inside a branch's host step: the flow goes once that step is
 * done, before the host takes its sibling's waiting step */
static void host_cancel_inside_a_branch_skips_the_waiting_sibling(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "par", cancellable_host_sub, NULL);
    r->api->execute(r, NULL, on_unhandled);
    host_run_all();
    assert_trace("host:cancel|cancel handler");
    assert_false(futoin_tool_host_pending(g_fx.tool));
}

static void host_steps_interleave_with_engine_steps(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "a", f_host, NULL);
    r->api->add(r, "c1", f_trace, NULL);
    r->api->add(r, "val", f_host, NULL);
    r->api->add(r, "got", f_host, NULL);
    r->api->add(r, "sub", f_host, NULL);
    r->api->add(r, "fail", f_host, eh_recover);
    r->api->add(r, "c2", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 1);
    host_run_all();
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0);
    assert_trace("host:a|c1|host:val|host:got+v|host:sub|inner|host:fail|fail:Fail|c2");
}

static void host_step_executing_another_root_only_schedules_it(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "nested", f_host, NULL);
    r->api->add(r, "parent", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    host_run_all();
    assert_trace("host:nested|parent|other");
    g_host_other->api->free(g_host_other);
}

static void host_step_waiting_is_completed_from_outside(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    FutoInAsyncSteps* r = g_fx.root;
    g_host_waiting = NULL;
    r->api->add(r, "wait", f_host, NULL);
    r->api->add(r, "after", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    host_run_all();
    assert_trace("host:wait");
    assert_non_null(g_host_waiting);
    g_host_waiting->api->success(g_host_waiting, NULL); /* scheduled, not inline */
    assert_trace("host:wait");
    host_run_all();
    assert_trace("host:wait|after");
}

static void host_step_cancelling_its_flow_ends_it_at_done(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "cancel", f_host, NULL);
    r->api->add(r, "never", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    host_run_all();
    assert_trace("host:cancel");
    /* the root is usable again */
    r->api->add(r, "again", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    host_run_all();
    assert_trace("host:cancel|again");
}

/* ---- loop and repeat bodies run by the host (futoin_tool_set_host_loops) ---- */

static void f_host_loop(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
    fail_msg("the engine called a host loop body itself");
}

static void f_host_repeat(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)bsi;
    (void)data;
    (void)i;
    fail_msg("the engine called a host repeat body itself");
}

static int g_loop_left;

/* runs taken bodies: "rep" traces its iteration and adds a sub-step on the
 * second; "loop" breaks when g_loop_left runs out */
static void host_drain_bodies(void)
{
    void* data;
    const FutoInArgs* args;
    FutoInAsyncSteps* bsi;
    while ((bsi = futoin_tool_host_next(g_fx.tool, &data, &args))) {
        size_t i = 99;
        int kind = futoin_tool_host_kind(bsi, &i);
        const char* what = data;
        if (kind == FUTOIN_HOST_REPEAT) {
            trace("%s:%d", what, (int)i);
            if (i == 1) {
                bsi->api->add(bsi, "sub", f_trace, NULL);
            }
        } else if (kind == FUTOIN_HOST_LOOP) {
            trace("%s", what);
            if (--g_loop_left == 0) {
                bsi->api->breakLoop(bsi, NULL);
            }
        } else {
            trace("step:%s", what);
        }
        futoin_tool_host_done(bsi);
    }
}

static void host_bodies_run_in_order_with_substeps_and_break(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    futoin_tool_set_host_loops(g_fx.tool, f_host_loop, f_host_repeat);
    FutoInAsyncSteps* r = g_fx.root;
    g_loop_left = 2;
    r->api->repeat(r, "rep", 3, f_host_repeat, NULL);
    r->api->add(r, "mid", f_trace, NULL);
    r->api->loop(r, "loop", f_host_loop, NULL);
    r->api->add(r, "end", f_host, NULL);
    r->api->execute(r, NULL, on_unhandled);
    host_loop_with(host_drain_bodies);
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0);
    assert_trace("rep:0|rep:1|sub|rep:2|mid|loop|loop|step:end");
}

static void host_repeat_of_a_million_is_bounded_by_bursts(void** state)
{
    (void)state;
    futoin_tool_set_host_loops(g_fx.tool, f_host_loop, f_host_repeat);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->repeat(r, "rep", 1000000, f_host_repeat, NULL);
    r->api->execute(r, NULL, on_unhandled);
    size_t n = 0, turns = 0, last = 0;
    for (;;) {
        int64_t d = futoin_tool_iterate(g_fx.tool, 0);
        ++turns;
        void* data;
        const FutoInArgs* args;
        FutoInAsyncSteps* bsi;
        while ((bsi = futoin_tool_host_next(g_fx.tool, &data, &args))) {
            size_t i = 0;
            assert_int_equal(futoin_tool_host_kind(bsi, &i), FUTOIN_HOST_REPEAT);
            assert_true(i == n);
            last = i;
            ++n;
            futoin_tool_host_done(bsi);
        }
        if (d < 0 && futoin_tool_next_delay(g_fx.tool) < 0) {
            break;
        }
    }
    assert_true(n == 1000000);
    assert_true(last == 999999);
    assert_true(turns >= 1000000 / 100); /* a burst per turn, never all at once */
}

/* the root runs repeat(count) of a host body under a burst of 10, up to
 * its first body, which waits for the host */
static FutoInAsyncSteps* start_host_repeat(size_t count)
{
    futoin_tool_set_host_loops(g_fx.tool, f_host_loop, f_host_repeat);
    futoin_tool_set_burst(g_fx.tool, 10);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->repeat(r, "rep", count, f_host_repeat, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    return r;
}

/* a loop body the host takes has the burst's budget too: what it spends
 * (sub-steps it ran itself) shortens the burst; it has no follow() */
static void host_loop_body_spends_burst(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = start_host_repeat(100);
    size_t taken = 0;
    FutoInAsyncSteps* bsi;
    while ((bsi = futoin_tool_host_next(g_fx.tool, NULL, NULL))) {
        if (taken++ == 0) {
            assert_int_equal(futoin_tool_host_budget(bsi), 9); /* the repeat step with its first body ran */
            futoin_tool_host_spend(bsi, 5);
            assert_int_equal(futoin_tool_host_budget(bsi), 4);
            assert_null(futoin_tool_host_follow(bsi));
        }
        futoin_tool_host_done(bsi);
    }
    assert_int_equal(taken, 5); /* 1 + the 4 left of the burst of 10 */
    r->api->cancel(r);
    futoin_tool_set_burst(g_fx.tool, 100);
}

/* a taken body may run further iterations of its loop as part of itself:
 * loop_room() bounds them by the burst and, for a repeat, by the count;
 * loop_ran() counts them (the burst is spent, the repeat goes on past
 * them, a continue then goes to the iteration after the last one run) */
static void host_loop_body_runs_iterations(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = start_host_repeat(20);
    FutoInAsyncSteps* bsi = futoin_tool_host_next(g_fx.tool, NULL, NULL);
    size_t i = 99;
    assert_int_equal(futoin_tool_host_kind(bsi, &i), FUTOIN_HOST_REPEAT);
    assert_int_equal(i, 0);
    assert_int_equal(futoin_tool_host_loop_room(bsi), 9); /* the burst: the repeat step with this body ran */
    futoin_tool_host_loop_ran(bsi, 3); /* iterations 1..3 */
    assert_int_equal(futoin_tool_host_loop_room(bsi), 6);
    assert_int_equal(futoin_tool_host_kind(bsi, &i), FUTOIN_HOST_REPEAT);
    assert_int_equal(i, 3);
    futoin_tool_host_done(bsi);
    /* the burst goes on with iteration 4 */
    bsi = futoin_tool_host_next(g_fx.tool, NULL, NULL);
    assert_int_equal(futoin_tool_host_kind(bsi, &i), FUTOIN_HOST_REPEAT);
    assert_int_equal(i, 4);
    futoin_tool_host_loop_ran(bsi, 100); /* past the room: only what the burst allows */
    assert_int_equal(futoin_tool_host_loop_room(bsi), 0);
    bsi->api->handle_error(bsi, "LoopCont", NULL); /* continue: after the last one run */
    futoin_tool_host_done(bsi);
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL)); /* the burst is over */
    futoin_tool_set_burst(g_fx.tool, 100);
    futoin_tool_iterate(g_fx.tool, 0);
    bsi = futoin_tool_host_next(g_fx.tool, NULL, NULL);
    assert_int_equal(futoin_tool_host_kind(bsi, &i), FUTOIN_HOST_REPEAT);
    assert_int_equal(i, 10);
    assert_int_equal(futoin_tool_host_loop_room(bsi), 9); /* not the burst: 11..19 are left */
    futoin_tool_host_loop_ran(bsi, 9);
    futoin_tool_host_done(bsi);
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL)); /* the repeat is done */
    assert_trace(""); /* no unhandled error */
    /* not a taken body */
    assert_int_equal(futoin_tool_host_loop_room(r), 0);
    futoin_tool_host_loop_ran(r, 1);
    assert_int_equal(futoin_tool_host_loop_room(NULL), 0);
    futoin_tool_host_loop_ran(NULL, 1);
}

/* ---- error handlers run by the host (futoin_tool_set_host_error) ---- */

static void eh_host(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    (void)code;
    fail_msg("the engine called a host error handler itself");
}

/* an engine step whose sub-step's handler ("re") raises Other; its own
 * handler ("outer", host) then passes it on to the root */
static void f_host_outer_adds_re(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, "re", f_host, eh_host);
}

/* runs taken steps and handlers by their data: "fail:X" raises X; handler
 * "rec" recovers, "sub" adds a sub-step, "re" raises Other, "pass" does
 * nothing (the error goes on) */
static void host_drain_eh(void)
{
    void* data;
    const FutoInArgs* args;
    FutoInAsyncSteps* bsi;
    while ((bsi = futoin_tool_host_next(g_fx.tool, &data, &args))) {
        const char* what = data;
        int kind = futoin_tool_host_kind(bsi, NULL);
        if (kind == FUTOIN_HOST_ERROR) {
            trace("eh:%s:%s", what, futoin_tool_host_error(bsi));
            if (!strcmp(what, "rec")) {
                bsi->api->success(bsi, NULL);
            } else if (!strcmp(what, "sub")) {
                bsi->api->add(bsi, "inner", f_trace, NULL);
            } else if (!strcmp(what, "re")) {
                bsi->api->handle_error(bsi, "Other", "i2");
            }
        } else {
            assert_int_equal(kind, FUTOIN_HOST_STEP);
            assert_null(futoin_tool_host_error(bsi));
            trace("step:%s", what);
            bsi->api->handle_error(bsi, "Fail", "i1");
        }
        futoin_tool_host_done(bsi);
    }
}

/* the fixture's root, with host steps and host error handlers on */
static FutoInAsyncSteps* host_root(void)
{
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    futoin_tool_set_host_error(g_fx.tool, eh_host);
    return g_fx.root;
}

static void host_error_handlers_recover_add_raise_and_pass_on(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = host_root();
    r->api->add(r, "rec", f_host, eh_host);
    r->api->add(r, "sub", f_host, eh_host);
    r->api->add(r, "after", f_trace, NULL);
    r->api->add(r, "pass", f_host, eh_host);
    r->api->execute(r, NULL, on_unhandled);
    host_loop_with(host_drain_eh);
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0);
    assert_trace("step:rec|eh:rec:Fail|step:sub|eh:sub:Fail|inner|after|step:pass|eh:pass:Fail"
                 "|unhandled:Fail:i1");
    /* a handler raising its own error: the outer handler gets it */
    r->api->add(r, "outer", f_host_outer_adds_re, eh_host);
    r->api->execute(r, NULL, on_unhandled);
    host_loop_with(host_drain_eh);
    assert_trace("step:rec|eh:rec:Fail|step:sub|eh:sub:Fail|inner|after|step:pass|eh:pass:Fail"
                 "|unhandled:Fail:i1|step:re|eh:re:Fail|eh:outer:Other|unhandled:Other:i2");
}

/* host_peek_of(): the kind of the host step of a flow next in line, not
 * taken; a host running the handlers of an external error alone stops
 * before the step after them */
static void host_peek_tells_a_handler_from_a_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = host_root();
    assert_int_equal(futoin_tool_host_peek_of(r), -1); /* not running */
    r->api->add(r, "rec", f_host, eh_host);
    r->api->add(r, "next", f_host, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(futoin_tool_host_peek_of(r), FUTOIN_HOST_STEP);
    assert_int_equal(futoin_tool_host_peek_of(r), FUTOIN_HOST_STEP); /* still there */
    void* data;
    const FutoInArgs* args;
    FutoInAsyncSteps* bsi = futoin_tool_host_next_of(r, &data, &args);
    assert_non_null(bsi);
    assert_int_equal(futoin_tool_host_peek_of(r), -1); /* taken */
    bsi->api->waitExternal(bsi);
    futoin_tool_host_done(bsi);
    bsi->api->handle_error(bsi, "Ext", NULL); /* from outside */
    assert_int_equal(futoin_steps_execute_nested(r), 1);
    assert_int_equal(futoin_tool_host_peek_of(r), FUTOIN_HOST_ERROR);
    bsi = futoin_tool_host_next_of(r, &data, &args);
    assert_string_equal(futoin_tool_host_error(bsi), "Ext");
    bsi->api->success(bsi, NULL);
    futoin_tool_host_done(bsi);
    assert_int_equal(futoin_tool_host_peek_of(r), FUTOIN_HOST_STEP);
    bsi = futoin_tool_host_next_of(r, &data, &args);
    assert_non_null(bsi);
    assert_string_equal((const char*)data, "next");
    futoin_tool_host_done(bsi);
    assert_int_equal(futoin_tool_host_peek_of(r), -1);
    /* bad input */
    assert_int_equal(futoin_tool_host_peek_of(NULL), -1);
}

/* a host step of a parallel branch that waits */
static FutoInAsyncSteps* g_branch_waiting;

static void f_host_parallel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, "b1", f_host, eh_host);
    p->api->add(p, "b2", f_host, NULL);
}

static void f_wait_saved(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    f_wait(bsi, data, args);
    g_branch_waiting = bsi;
}

static void f_branch_wait_then(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, "w", f_wait_saved, NULL);
    bsi->api->add(bsi, "b1 after", f_trace, NULL);
}

/* a branch: "A" waits (g_branch_waiting) with a handler that recovers,
 * then "A next" */
static void f_branch_wait_recover(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, "A", f_wait_saved, eh_recover);
    bsi->api->add(bsi, "A next", f_trace, NULL);
}

/* r runs a parallel of that branch and one that waits; "A" fails from
 * outside and its handler runs (futoin_steps_unwind_now()): the key of the
 * branch its handler left queued */
static uint32_t branch_left_by_its_handler(FutoInAsyncSteps* r)
{
    FutoInAsyncTool* t = g_fx.tool;
    FutoInAsyncSteps* p = r->api->parallel(r, NULL, NULL);
    p->api->add(p, NULL, f_branch_wait_recover, NULL);
    p->api->add(p, "B", f_wait, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(t, 0);
    futoin_tool_iterate(t, 0); /* the branches start */
    FutoInAsyncSteps* w = g_branch_waiting;
    const uint32_t key = futoin_steps_branch_key(w);
    assert_int_not_equal(key, 0);
    assert_int_equal(futoin_steps_execute_key(r, key), 0); /* it waits */
    w->api->handle_error(w, "Boom", NULL);
    assert_int_equal(futoin_steps_execute_key(r, key), 0); /* queued, its handler not run yet */
    assert_int_equal(futoin_steps_unwind_now(r), 1);
    assert_trace("A|B|A:Boom");
    return key;
}

/* execute_key(): the strand of that key the handlers of an error from
 * outside left queued goes on at once (the burst owner, in the call that
 * raised the error), once; a strand the host owes an event (a ticket) waits
 * for that event */
static void execute_key_runs_the_strand_its_handlers_left(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    const uint32_t key = branch_left_by_its_handler(r);
    assert_int_equal(futoin_steps_execute_key(r, 0), 0); /* the main sequence waits for its parallel */
    assert_int_equal(futoin_steps_execute_key(r, key), 1);
    assert_trace("A|B|A:Boom|A next");
    assert_int_equal(futoin_steps_execute_key(r, key), 0);

    FutoInAsyncSteps* r2 = futoin_steps_new(g_fx.tool);
    trace_reset();
    const uint32_t key2 = branch_left_by_its_handler(r2);
    const uint32_t ticket = futoin_steps_claim_queued(r2);
    assert_int_not_equal(ticket, 0);
    assert_int_equal(futoin_steps_execute_key(r2, key2), 0);
    assert_int_equal(futoin_steps_execute_owed(r2, ticket), 1);
    assert_trace("A|B|A:Boom|A next");
    r2->api->free(r2);
}

static void f_par_waiting(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, NULL, f_branch_wait_then, NULL);
    p->api->add(p, "b2", f_wait, NULL);
}

/* execute_strand(): a branch whose step was completed from outside goes on
 * now, alone (the JS reference goes on with an await() in a parallel
 * branch in the promise's reaction); the main strand waits for its turn */
static void branch_completed_from_outside_goes_on_at_once(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_par_waiting, NULL);
    r->api->add(r, "after", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    g_branch_waiting = NULL;
    for (int turn = 0; turn < 3; ++turn) {
        futoin_tool_iterate(g_fx.tool, 0);
    }
    assert_trace("w|b2");
    assert_non_null(g_branch_waiting);
    assert_int_equal(futoin_steps_execute_strand(g_branch_waiting), 0); /* not completed yet */
    g_branch_waiting->api->success(g_branch_waiting, NULL);
    assert_int_equal(futoin_steps_execute_nested(r), 0); /* the main strand waits */
    assert_int_equal(futoin_steps_execute_strand(g_branch_waiting), 1);
    assert_trace("w|b2|b1 after");
    assert_int_equal(futoin_steps_execute_strand(r), 0); /* nothing queued there */
    assert_int_equal(futoin_steps_execute_strand(NULL), 0);
}

static void f_branch_wait_then_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, "w", f_wait_saved, NULL);
    bsi->api->add(bsi, "E3", f_fail, NULL);
}

static void f_par_fails_later(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, "par", eh_recover);
    p->api->add(p, NULL, f_branch_wait_then_fail, NULL);
}

/* parallel_failed(): a branch run by execute_strand() failed its parallel,
 * whose handlers wait queued; unwind_now() runs them at once (the JS
 * reference propagates the error inside the promise reaction that resumed
 * the branch), the step after them on a later turn. Told once. */
static void parallel_failed_tells_a_branch_error_waiting(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_par_fails_later, NULL);
    r->api->add(r, "after", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    g_branch_waiting = NULL;
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("w");
    assert_int_equal(futoin_steps_parallel_failed(r), 0);
    g_branch_waiting->api->success(g_branch_waiting, NULL);
    assert_int_equal(futoin_steps_execute_strand(g_branch_waiting), 1);
    assert_trace("w"); /* E3 failed the branch, the parallel's handler waits */
    assert_int_equal(futoin_steps_parallel_failed(r), 1);
    assert_int_equal(futoin_steps_parallel_failed(r), 0); /* told once */
    assert_int_equal(futoin_steps_unwind_now(r), 1);
    assert_trace("w|par:E3");
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("w|par:E3|after");
    assert_int_equal(futoin_steps_parallel_failed(r), 0);
    assert_int_equal(futoin_steps_parallel_failed(NULL), 0);
}

static void f_inner_par_fails_later(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, "inner", eh_trace);
    p->api->add(p, NULL, f_branch_wait_then_fail, NULL);
}

static void f_sibling_waits_then(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, NULL, f_wait_kept, NULL);
    bsi->api->add(bsi, "sibling next", f_trace, NULL);
}

static void f_outer_par(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, NULL, f_inner_par_fails_later, NULL);
    p->api->add(p, NULL, f_sibling_waits_then, NULL);
}

/* a branch failing its parallel: the parallel's handlers run before any
 * work queued earlier (a sibling branch of an outer parallel, resumed in the
 * same turn), which the failure then cancels, as the reference raises the
 * error up inside the call that raised it */
static void failed_parallel_handlers_run_before_queued_work(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_outer_par, NULL);
    r->api->execute(r, NULL, on_unhandled);
    g_branch_waiting = NULL;
    g_waiting_step = NULL;
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("w");
    g_branch_waiting->api->success(g_branch_waiting, NULL);
    g_waiting_step->api->success(g_waiting_step, NULL);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("w|inner:E3|unhandled:E3:info");
}

/* at_top(): no step of the running flow in progress once its waiting
 * root-level step completed from outside; a root add() then appends */
static void root_at_top_between_steps_takes_more_steps(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    assert_int_equal(futoin_steps_at_top(r), 0); /* not running */
    r->api->add(r, "w", f_wait_saved, NULL);
    r->api->add(r, "b", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(futoin_steps_at_top(r), 0); /* "w" waits */
    g_branch_waiting->api->success(g_branch_waiting, NULL);
    assert_int_equal(futoin_steps_at_top(r), 1);
    r->api->add(r, "c", f_trace, NULL);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("w|b|c");
    assert_int_equal(futoin_steps_at_top(r), 0);
    assert_int_equal(futoin_steps_at_top(NULL), 0);
}

/* unwind_now(): an error raised from outside on a step of a parallel branch
 * unwinds now, up to the branch's own host handler, then, not handled, up to
 * the parallel's */
static void host_branch_error_runs_at_once(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = host_root();
    r->api->add(r, "par", f_host_parallel, eh_host);
    r->api->add(r, "after", f_host, NULL);
    r->api->execute(r, NULL, on_unhandled);
    void* data;
    const FutoInArgs* args;
    FutoInAsyncSteps* bsi;
    g_branch_waiting = NULL;
    for (int turn = 0; turn < 3; ++turn) {
        futoin_tool_iterate(g_fx.tool, 0);
        while ((bsi = futoin_tool_host_next(g_fx.tool, &data, &args))) {
            bsi->api->waitExternal(bsi); /* both branches wait */
            if (!strcmp(data, "b1")) {
                g_branch_waiting = bsi;
            }
            futoin_tool_host_done(bsi);
        }
    }
    assert_non_null(g_branch_waiting);
    assert_int_equal(futoin_steps_unwind_now(r), 0); /* nothing to unwind */
    g_branch_waiting->api->handle_error(g_branch_waiting, "Ext", NULL); /* from outside */
    assert_int_equal(futoin_steps_execute_nested(r), 0); /* the main strand waits */
    assert_int_equal(futoin_steps_unwind_now(r), 1);
    assert_int_equal(futoin_tool_host_peek_of(r), FUTOIN_HOST_ERROR);
    bsi = futoin_tool_host_next_of(r, &data, &args);
    assert_string_equal(data, "b1");
    assert_string_equal(futoin_tool_host_error(bsi), "Ext");
    /* not handled: b2 is cancelled, the parallel fails, its handler is next
     * at once (nothing left for unwind_now()) */
    futoin_tool_host_done_unwinding(bsi);
    assert_int_equal(futoin_tool_host_peek_of(r), FUTOIN_HOST_ERROR);
    assert_int_equal(futoin_steps_unwind_now(r), 0);
    bsi = futoin_tool_host_next_of(r, &data, &args);
    assert_string_equal(data, "par");
    bsi->api->success(bsi, NULL);
    futoin_tool_host_done_unwinding(bsi);
    assert_int_equal(futoin_tool_host_peek_of(r), -1); /* "after" waits for a turn */
    assert_int_equal(futoin_steps_unwind_now(r), 0);
    host_run_all();
    assert_trace("host:after");
    assert_int_equal(futoin_steps_unwind_now(NULL), 0);
}

/* the step after the handlers of an error from outside takes its turn after
 * a flow completed from outside before it, as after a success from outside */
static void host_step_after_unwinding_waits_its_turn(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = host_root();
    FutoInAsyncSteps* r2 = futoin_steps_new(g_fx.tool);
    r->api->add(r, "rec", f_host, eh_host);
    r->api->add(r, "r-next", f_host, NULL);
    r2->api->add(r2, "wait2", f_host, NULL);
    r2->api->add(r2, "r2-next", f_host, NULL);
    r->api->execute(r, NULL, on_unhandled);
    r2->api->execute(r2, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    void* data;
    const FutoInArgs* args;
    FutoInAsyncSteps* waiting[2];
    for (int i = 0; i < 2; ++i) {
        waiting[i] = futoin_tool_host_next(g_fx.tool, &data, &args);
        assert_non_null(waiting[i]);
        waiting[i]->api->waitExternal(waiting[i]);
        futoin_tool_host_done(waiting[i]);
    }
    waiting[1]->api->success(waiting[1], NULL);       /* r2 first */
    waiting[0]->api->handle_error(waiting[0], "Ext", NULL); /* then r fails */
    assert_int_equal(futoin_steps_unwind_now(r), 1);
    FutoInAsyncSteps* eh = futoin_tool_host_next_of(r, &data, &args);
    assert_int_equal(futoin_tool_host_kind(eh, NULL), FUTOIN_HOST_ERROR);
    eh->api->success(eh, NULL);
    futoin_tool_host_done_unwinding(eh);
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0); /* nothing ran on */
    host_run_all();
    assert_trace("host:r2-next|host:r-next");
    r2->api->free(r2);
}

static FutoInAsyncSteps* g_engine_waiting;

static void f_wait_keep(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    f_wait(bsi, data, args);
    g_engine_waiting = bsi;
}

/* a C handler recovering while unwind_now() runs: the C step after it waits
 * for a turn too */
static void engine_step_after_unwinding_waits_its_turn(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "w", f_wait_keep, eh_recover);
    r->api->add(r, "after", f_trace, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_trace("w");
    assert_non_null(g_engine_waiting);
    g_engine_waiting->api->handle_error(g_engine_waiting, "Ext", NULL); /* from outside */
    assert_int_equal(futoin_steps_unwind_now(r), 1);
    assert_trace("w|w:Ext"); /* the handler ran, "after" did not */
    futoin_tool_run(g_fx.tool);
    assert_trace("w|w:Ext|after");
}

/* finish_done(): a flow whose last step completed from outside ends now
 * (done hook, idle root), running no step; not while a step is left */
static void f_adds_wait_keep(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->add(bsi, data, f_wait_keep, NULL);
}

static void on_done_trace(FutoInAsyncSteps* root, void* data)
{
    (void)root;
    trace("done:%s", (const char*)data);
}

static void finish_done_ends_a_flow_completed_from_outside(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "w", f_wait_keep, NULL);
    r->api->add(r, "after", f_trace, NULL);
    futoin_steps_set_done(r, on_done_trace, "r");
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_steps_finish_done(r), 0); /* not run yet */
    futoin_tool_iterate(g_fx.tool, 0);
    g_engine_waiting->api->success(g_engine_waiting, NULL);
    assert_int_equal(futoin_steps_finish_done(r), 0); /* "after" is left */
    futoin_tool_run(g_fx.tool);
    assert_trace("w|after|done:r");

    r->api->add(r, "outer", f_adds_wait_keep, NULL);
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(futoin_steps_finish_done(r), 0); /* it waits */
    g_engine_waiting->api->success(g_engine_waiting, NULL);
    assert_int_equal(futoin_steps_finish_done(r), 1);
    assert_trace("w|after|done:r|outer|done:r");
    r->api->add(r, "again", f_trace, NULL); /* idle: a new run */
    r->api->execute(r, NULL, on_unhandled);
    futoin_tool_run(g_fx.tool);
    assert_trace("w|after|done:r|outer|done:r|again|done:r");
    assert_int_equal(futoin_steps_finish_done(r), 0);
    assert_int_equal(futoin_steps_finish_done(NULL), 0);
}

/* ---- idle flows (futoin_steps_host_idle) ---- */

static FutoInAsyncSteps* g_idle_waiting[4];
static size_t g_idle_nwaiting;

static void idle_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    trace("cancel:%s", (const char*)data);
}

/* a host whose steps wait: "w" plain, "wt" with a timer, "wc" with a cancel
 * handler (idle_cancel), "sub" adds a waiting host step "w" */
static void idle_drain(void)
{
    void* data;
    const FutoInArgs* args;
    FutoInAsyncSteps* bsi;
    while ((bsi = futoin_tool_host_next(g_fx.tool, &data, &args))) {
        const char* what = data;
        trace("host:%s", what);
        if (!strcmp(what, "sub")) {
            bsi->api->add(bsi, "w", f_host, eh_recover);
        } else if (what[0] == 'w') {
            bsi->api->waitExternal(bsi);
            if (what[1] == 't') {
                bsi->api->setTimeout(bsi, 1000);
            } else if (what[1] == 'c') {
                bsi->api->setCancel(bsi, "wc", idle_cancel);
            }
            g_idle_waiting[g_idle_nwaiting++ % 4] = bsi;
        }
        futoin_tool_host_done(bsi);
    }
}

/* each(): the data names, in g_trace */
static void idle_each(void* ctx, void* data)
{
    ++*(int*)ctx;
    trace("kept:%s", (const char*)data);
}

static void idle_turns(void)
{
    futoin_tool_iterate(g_fx.tool, 0);
    idle_drain();
}

static void host_idle_tells_a_flow_only_its_host_can_move(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    g_idle_nwaiting = 0;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "sub", f_host, eh_recover);
    r->api->add(r, "next", f_host, NULL);
    r->api->add(r, "c-step", f_trace, NULL);
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 0); /* not executed */
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 0); /* ready to run */
    idle_turns();
    assert_trace("host:sub|host:w");
    int n = 0;
    trace_reset();
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, idle_each, &n), 1);
    /* the waiting step, the step that added it (its handler), the step queued
     * after it; the C step is none of the host's */
    assert_int_equal(n, 3);
    assert_trace("kept:w|kept:sub|kept:next");
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 1);
    FutoInAsyncSteps* w = g_idle_waiting[0];
    w->api->success(w, NULL);
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 0); /* ready again */
    trace_reset();
    idle_turns();
    assert_trace("host:next|c-step");
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 0); /* finished */
}

static void host_idle_is_not_a_flow_with_a_timer_or_an_engine_wait(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "wt", f_host, NULL);
    r->api->execute(r, NULL, on_unhandled);
    idle_turns();
    assert_trace("host:wt");
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 0); /* its timer moves it */

    FutoInAsyncSteps* r2 = futoin_steps_new(g_fx.tool);
    r2->api->add(r2, "c-wait", f_wait, NULL); /* C code completes it */
    r2->api->execute(r2, NULL, on_unhandled);
    idle_turns();
    assert_int_equal(futoin_steps_host_idle(r2, idle_cancel, NULL, NULL), 0);
    r2->api->free(r2);

    FutoInAsyncSteps* r3 = futoin_steps_new(g_fx.tool);
    FutoInSync* m = futoin_mutex_new(g_fx.tool, 1, FUTOIN_UNLIMITED);
    r3->api->addSync(r3, m, "w", f_host, NULL); /* holds the lock while it waits */
    r3->api->execute(r3, NULL, on_unhandled);
    trace_reset();
    idle_turns();
    assert_trace("host:w");
    assert_int_equal(futoin_steps_host_idle(r3, idle_cancel, NULL, NULL), 0);
    r3->api->free(r3);
    futoin_sync_free(m);
    assert_int_equal(futoin_steps_host_idle(NULL, idle_cancel, NULL, NULL), 0);
}

static void host_idle_walks_parallel_branches_and_cancel_handlers(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host);
    g_idle_nwaiting = 0;
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, NULL, NULL);
    p->api->add(p, "w", f_host, NULL);
    p->api->add(p, "wc", f_host, NULL);
    r->api->execute(r, NULL, on_unhandled);
    idle_turns();
    idle_turns();
    assert_trace("host:w|host:wc");
    int n = 0;
    trace_reset();
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, idle_each, &n), 1);
    assert_int_equal(n, 3); /* both steps, the cancel handler's data */
    assert_trace("kept:w|kept:wc|kept:wc");
    assert_int_equal(futoin_steps_host_idle(r, NULL, NULL, NULL), 1); /* idle, whatever the cancel callback */
    /* a branch done, the other waits: still idle */
    g_idle_waiting[0]->api->success(g_idle_waiting[0], NULL);
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 0); /* the branch is ready */
    trace_reset();
    idle_turns();
    n = 0;
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, idle_each, &n), 1);
    assert_trace("kept:wc|kept:wc");
    r->api->cancel(r);
    assert_trace("kept:wc|kept:wc|cancel:wc");
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 0);
}

/* a plain callback of a host that runs its steps itself: traces, waits
 * ("w", "wc" with a cancel handler) or adds a waiting sub-step ("sub") */
static void f_plain(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* what = data;
    trace("plain:%s", what);
    if (!strcmp(what, "sub")) {
        bsi->api->add(bsi, "wc", f_plain, eh_recover);
    } else if (what[0] == 'w') {
        bsi->api->waitExternal(bsi);
        if (what[1] == 'c') {
            bsi->api->setCancel(bsi, "wc", idle_cancel);
        }
        g_idle_waiting[g_idle_nwaiting++ % 4] = bsi;
    }
}

static void idle_in_names_the_callbacks_of_a_host_of_plain_steps(void** state)
{
    (void)state;
    g_idle_nwaiting = 0;
    const FutoInIdleHost host = {f_plain, eh_recover, NULL, NULL, idle_cancel};
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, "sub", f_plain, NULL);
    r->api->add(r, "next", f_plain, NULL);
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_steps_idle_in(r, &host, NULL, NULL), 0); /* ready to run */
    futoin_tool_iterate(g_fx.tool, 0);
    assert_trace("plain:sub|plain:wc");
    trace_reset();
    int n = 0;
    assert_int_equal(futoin_steps_idle_in(r, &host, idle_each, &n), 1);
    /* the waiting step (and its handler, and its cancel handler), the step
     * that added it, the step queued after that */
    assert_int_equal(n, 4);
    assert_trace("kept:wc|kept:wc|kept:sub|kept:next");
    /* without host_exec the tool has no host of its own: not idle for it */
    assert_int_equal(futoin_steps_host_idle(r, idle_cancel, NULL, NULL), 0);
    const FutoInIdleHost other = {f_trace, NULL, NULL, NULL, NULL};
    assert_int_equal(futoin_steps_idle_in(r, &other, NULL, NULL), 0); /* another host's wait */
    const FutoInIdleHost none = {NULL, NULL, NULL, NULL, NULL};
    assert_int_equal(futoin_steps_idle_in(r, &none, NULL, NULL), 0);
    assert_int_equal(futoin_steps_idle_in(r, NULL, NULL, NULL), 0);
    FutoInAsyncSteps* w = g_idle_waiting[0];
    w->api->success(w, NULL);
    assert_int_equal(futoin_steps_idle_in(r, &host, NULL, NULL), 0); /* ready again */
    trace_reset();
    futoin_tool_iterate(g_fx.tool, 0);
    assert_trace("plain:next");
    assert_int_equal(futoin_steps_idle_in(r, &host, NULL, NULL), 0); /* finished */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(host_peek_tells_a_handler_from_a_step),
            T(host_idle_tells_a_flow_only_its_host_can_move),
            T(host_idle_is_not_a_flow_with_a_timer_or_an_engine_wait),
            T(host_idle_walks_parallel_branches_and_cancel_handlers),
            T(idle_in_names_the_callbacks_of_a_host_of_plain_steps),
            T(engine_step_after_unwinding_waits_its_turn),
            T(finish_done_ends_a_flow_completed_from_outside),
            T(host_step_after_unwinding_waits_its_turn),
            T(host_branch_error_runs_at_once),
            T(host_sibling_waiting_for_the_host_is_torn_down_cleanly),
            T(host_steps_interleave_with_engine_steps),
            T(host_step_waiting_to_be_taken_is_cancelled_at_once),
            T(branch_completed_from_outside_goes_on_at_once),
            T(cancel_handler_tells_the_error_it_unwinds),
            T(cancel_handler_of_a_sibling_tells_the_failed_branch_error),
            T(cancel_handler_of_a_branch_tells_the_error_unwinding_its_parallel),
            T(take_error_crossed_tells_the_first_handler_past_the_branch),
            T(iterate_timers_runs_a_timeout_and_its_parallel_handlers_only),
            T(timeout_handlers_run_in_the_timer_turn_the_next_steps_later),
            T(each_flow_left_steps_after_its_timeout_is_taken_in_order),
            T(timeout_of_the_burst_owner_goes_on_in_the_timer_turn),
            T(branch_ended_by_handlers_ends_in_a_turn_of_its_own),
            T(execute_key_runs_the_strand_its_handlers_left),
            T(defer_after_goes_on_in_a_later_event),
            T(run_one_turn_reaching_a_parallel_runs_its_branches),
            T(branch_error_runs_parallel_handler_in_its_event_the_added_steps_later),
            T(execute_owed_runs_the_strand_of_its_ticket),
            T(only_ends_flow_tells_the_last_waiting_step),
            T(is_waiting_tells_a_step_that_waits_for_an_event),
            T(is_waiting_tells_a_loop_body_that_waits),
            T(runs_substeps_tells_a_step_its_handler_moved_on),
            T(goes_on_later_tells_a_flow_completed_from_outside),
            T(in_branch_tells_a_parallel_branch_step),
            T(fail_waiting_on_a_branch_step_fails_that_branch),
            T(parallel_failed_tells_a_branch_error_waiting),
            T(failed_parallel_handlers_run_before_queued_work),
            T(cancel_after_outside_success_spares_ended_steps),
            T(outside_success_ends_the_enclosing_step_before_its_timeout),
            T(root_at_top_between_steps_takes_more_steps),
            T(host_cancel_inside_a_branch_skips_the_waiting_sibling),
            T(host_step_waiting_is_completed_from_outside),
            T(host_step_executing_another_root_only_schedules_it),
            T(host_step_cancelling_its_flow_ends_it_at_done),
            T(host_bodies_run_in_order_with_substeps_and_break),
            T(host_repeat_of_a_million_is_bounded_by_bursts),
            T(host_loop_body_spends_burst),
            T(host_loop_body_runs_iterations),
            T(host_error_handlers_recover_add_raise_and_pass_on),
            T(million_iterations_constant_stack),
            T(million_loop_iterations_with_substeps),
            T(nested_levels_constant_stack),
            T(nested_levels_error_unwinds),
            T(nested_levels_cancel),
            T(no_allocation_in_steady_state),
            T(burst_limits_one_flow_turn),
            T(default_burst_is_100),
            T(external_success_schedules_not_inline),
            T(done_callback_after_success_only),
            T(cancelled_callback_on_cancel_only),
            T(host_data_is_per_root_and_seen_by_every_step),
            T(execute_only_schedules),
    };
    return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
