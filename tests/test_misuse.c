/* Misuse of the binary interface: InternalError with a descriptive info, or
 * ignored with a report on stderr. Never a crash. */
#include "helpers.h"

static void eh_info(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("%s:%s", code, error_info(bsi));
}

#define MISUSE_STEP(name, body)                                                  \
    static void name(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)        \
    {                                                                            \
        (void)bsi;                                                               \
        (void)d;                                                                 \
        (void)a;                                                                 \
        body;                                                                    \
    }

MISUSE_STEP(m_success_after_add, {
    bsi->api->add(bsi, NULL, f_noop, NULL);
    bsi->api->success(bsi, NULL);
})
MISUSE_STEP(m_success_twice, {
    bsi->api->success(bsi, NULL);
    bsi->api->success(bsi, NULL);
})
MISUSE_STEP(m_error_twice, {
    bsi->api->handle_error(bsi, "A", NULL);
    bsi->api->handle_error(bsi, "B", NULL);
})
MISUSE_STEP(m_error_after_success, {
    bsi->api->success(bsi, NULL);
    bsi->api->handle_error(bsi, "A", NULL);
})
MISUSE_STEP(m_add_after_success, {
    bsi->api->success(bsi, NULL);
    bsi->api->add(bsi, NULL, f_noop, NULL);
})
static void c_noop(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
}

MISUSE_STEP(m_timeout_after_success, {
    bsi->api->success(bsi, NULL);
    bsi->api->setTimeout(bsi, 10);
})
MISUSE_STEP(m_cancel_after_success, {
    bsi->api->success(bsi, NULL);
    bsi->api->setCancel(bsi, NULL, c_noop);
})
MISUSE_STEP(m_wait_after_success, {
    bsi->api->success(bsi, NULL);
    bsi->api->waitExternal(bsi);
})
MISUSE_STEP(m_add_null, bsi->api->add(bsi, NULL, NULL, NULL))
MISUSE_STEP(m_loop_null, bsi->api->loop(bsi, NULL, NULL, NULL))
MISUSE_STEP(m_repeat_null, bsi->api->repeat(bsi, NULL, 3, NULL, NULL))
MISUSE_STEP(m_sync_null, bsi->api->addSync(bsi, NULL, NULL, f_noop, NULL))
MISUSE_STEP(m_error_null_code, bsi->api->handle_error(bsi, NULL, "x"))
MISUSE_STEP(m_set_cancel_null, bsi->api->setCancel(bsi, NULL, NULL))
MISUSE_STEP(m_execute_step, bsi->api->execute(bsi, NULL, NULL))
MISUSE_STEP(m_cancel_step, bsi->api->cancel(bsi))
MISUSE_STEP(m_state_null_name, {
    assert_null(bsi->api->stateVariable(bsi, NULL, NULL, NULL, NULL));
})

static void run_misuse(FutoInAsyncSteps_execute_callback f)
{
    g_fx.root->api->add(g_fx.root, NULL, f, eh_info);
    run_root();
}

static void success_after_add(void** s)
{
    (void)s;
    run_misuse(m_success_after_add);
    assert_trace("InternalError:Invalid success() call|unhandled:InternalError:Invalid success() call");
}

static void success_twice(void** s)
{
    (void)s;
    run_misuse(m_success_twice);
    assert_trace("InternalError:success() called twice|unhandled:InternalError:success() called twice");
}

static void error_twice(void** s)
{
    (void)s;
    run_misuse(m_error_twice);
    assert_trace("InternalError:handle_error() called twice|"
                 "unhandled:InternalError:handle_error() called twice");
}

static void error_after_success(void** s)
{
    (void)s;
    run_misuse(m_error_after_success);
    assert_trace("InternalError:handle_error() after success()|"
                 "unhandled:InternalError:handle_error() after success()");
}

static void add_after_success(void** s)
{
    (void)s;
    run_misuse(m_add_after_success);
    assert_trace("InternalError:add() after success()|unhandled:InternalError:add() after success()");
}

/* nothing waits on a completed step: taken silently, they armed no timer
 * and no cancel handler (the flow went on as if not called) */
static void wait_calls_after_success(void** s)
{
    (void)s;
    run_misuse(m_timeout_after_success);
    assert_trace("InternalError:setTimeout() after success()|unhandled:InternalError:setTimeout() after success()");
    trace_reset();
    run_misuse(m_cancel_after_success);
    assert_trace("InternalError:setCancel() after success()|unhandled:InternalError:setCancel() after success()");
    trace_reset();
    run_misuse(m_wait_after_success);
    assert_trace("InternalError:waitExternal() after success()|"
                 "unhandled:InternalError:waitExternal() after success()");
}

static void add_without_callback(void** s)
{
    (void)s;
    run_misuse(m_add_null);
    assert_trace("InternalError:add() without an execute callback|"
                 "unhandled:InternalError:add() without an execute callback");
}

static void loop_without_body(void** s)
{
    (void)s;
    run_misuse(m_loop_null);
    assert_trace("InternalError:loop without a body callback|"
                 "unhandled:InternalError:loop without a body callback");
}

static void repeat_without_body(void** s)
{
    (void)s;
    run_misuse(m_repeat_null);
    assert_trace("InternalError:loop without a body callback|"
                 "unhandled:InternalError:loop without a body callback");
}

static void add_sync_without_sync(void** s)
{
    (void)s;
    run_misuse(m_sync_null);
    assert_trace("InternalError:addSync() without a valid sync object|"
                 "unhandled:InternalError:addSync() without a valid sync object");
}

static void error_without_code(void** s)
{
    (void)s;
    run_misuse(m_error_null_code);
    assert_trace("InternalError:handle_error() without an error code|"
                 "unhandled:InternalError:handle_error() without an error code");
}

static void set_cancel_without_callback(void** s)
{
    (void)s;
    run_misuse(m_set_cancel_null);
    assert_trace("InternalError:setCancel() without a callback|"
                 "unhandled:InternalError:setCancel() without a callback");
}

static void execute_on_step(void** s)
{
    (void)s;
    run_misuse(m_execute_step);
    assert_trace("InternalError:execute() on a step that is not a root|"
                 "unhandled:InternalError:execute() on a step that is not a root");
}

static void cancel_on_step(void** s)
{
    (void)s;
    run_misuse(m_cancel_step);
    assert_trace("InternalError:cancel() on a step that is not a root|"
                 "unhandled:InternalError:cancel() on a step that is not a root");
}

static void state_variable_without_name(void** s)
{
    (void)s;
    run_misuse(m_state_null_name);
    assert_trace("InternalError:stateVariable() without a name|"
                 "unhandled:InternalError:stateVariable() without a name");
}

static FutoInAsyncSteps* g_old;
MISUSE_STEP(m_save, g_old = bsi)

static void calls_on_completed_step_are_ignored(void** s)
{
    (void)s;
    g_fx.root->api->add(g_fx.root, NULL, m_save, NULL);
    run_root();
    FutoInArgs args = args0();
    args.arg0 = val_heap_str("dropped");
    g_heap_cleanups = 0;
    g_old->api->success(g_old, &args);
    assert_int_equal(g_heap_cleanups, 1); /* not leaked */
    g_old->api->handle_error(g_old, "X", NULL);
    g_old->api->add(g_old, NULL, f_noop, NULL);
    g_old->api->setTimeout(g_old, 5);
    g_old->api->waitExternal(g_old);
    g_old->api->breakLoop(g_old, NULL);
    assert_null(g_old->api->stack(g_old, 8, NULL));
    assert_false(g_old->api->isValid(g_old));
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("");
}

static void null_bsi_everywhere(void** s)
{
    (void)s;
    const FutoInAsyncStepsAPI* api = g_fx.root->api;
    FutoInArgs args = args0();
    api->add(NULL, NULL, f_noop, NULL);
    assert_non_null(api->parallel(NULL, NULL, NULL));
    assert_null(api->stateVariable(NULL, NULL, "x", NULL, NULL));
    assert_null(api->stack(NULL, 1, NULL));
    api->success(NULL, &args);
    api->success(NULL, NULL);
    api->handle_error(NULL, "X", NULL);
    api->setTimeout(NULL, 1);
    api->setCancel(NULL, NULL, NULL);
    api->waitExternal(NULL);
    api->loop(NULL, NULL, NULL, NULL);
    api->repeat(NULL, NULL, 1, NULL, NULL);
    api->breakLoop(NULL, NULL);
    api->continueLoop(NULL, NULL);
    api->execute(NULL, NULL, NULL);
    api->cancel(NULL);
    api->addSync(NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(api->rootId(NULL), 0);
    assert_int_equal(api->isValid(NULL), 0);
    assert_null(api->newInstance(NULL));
    api->free(NULL);
    FutoInHandle h = api->sched_immediate(NULL, NULL, NULL);
    assert_null(h.data1);
    h = api->sched_deferred(NULL, 1, NULL, NULL);
    assert_null(h.data1);
    api->sched_cancel(NULL, &h);
    assert_int_equal(api->sched_is_valid(NULL, &h), 0);
    assert_int_equal(api->is_same_thread(NULL), 0);
}

/* the second callback sees why in error_info; the running flow's own
 * error_info is left as it was */
static void eh_trace_info(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    trace("%s:%s:%s", (const char*)data, code, info);
}

static void f_trace_info(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("%s:[%s]", (const char*)data, (const char*)bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL));
}

static void execute_twice_reports_to_second_callback(void** s)
{
    (void)s;
    g_fx.root->api->add(g_fx.root, "step", f_trace_info, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, on_unhandled);
    g_fx.root->api->execute(g_fx.root, "second", eh_trace_info);
    assert_trace("second:InternalError:execute() called twice");
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("second:InternalError:execute() called twice|step:[]");
}

MISUSE_STEP(m_free_step, bsi->api->free(bsi))

static void free_of_step_is_ignored(void** s)
{
    (void)s;
    g_fx.root->api->add(g_fx.root, NULL, m_free_step, NULL);
    g_fx.root->api->add(g_fx.root, "still running", f_trace, NULL);
    run_root();
    assert_trace("still running");
}

static void parallel_misuse_returns_harmless_object(void** s)
{
    (void)s;
    FutoInAsyncSteps* dead = g_fx.root->api->parallel(NULL, NULL, NULL);
    dead->api->add(dead, NULL, f_noop, NULL);
    assert_false(dead->api->isValid(dead));
    assert_false(futoin_steps_is_native(dead));
}

static void set_timeout_outside_callback_is_ignored(void** s)
{
    (void)s;
    g_fx.root->api->setTimeout(g_fx.root, 10);
    g_fx.root->api->waitExternal(g_fx.root);
    g_fx.root->api->add(g_fx.root, "ran", f_trace, NULL);
    run_root();
    assert_trace("ran");
}

static void unhandled_without_callback_drops_flow(void** s)
{
    (void)s;
    g_fx.root->api->add(g_fx.root, "Oops", f_fail, NULL);
    g_fx.root->api->add(g_fx.root, "never", f_trace, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, NULL);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("");
    /* and the root is usable again */
    g_fx.root->api->add(g_fx.root, "again", f_trace, NULL);
    run_root();
    assert_trace("again");
}

static void free_in_unhandled(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("free:%s", code);
    bsi->api->free(bsi);
}

static void root_freed_from_its_own_callback(void** s)
{
    (void)s;
    FutoInAsyncSteps* as = g_fx.root;
    g_fx.root = NULL;
    as->api->add(as, "E", f_fail, NULL);
    as->api->execute(as, NULL, free_in_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("free:E");
}

MISUSE_STEP(m_free_root_inside, {
    FutoInAsyncSteps* root = d;
    root->api->free(root);
    trace("freed");
})

static void cancel_tr(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
    trace("cancelled");
}

MISUSE_STEP(m_waiter, bsi->api->setCancel(bsi, NULL, cancel_tr))

static void root_freed_inside_step_cancels_flow(void** s)
{
    (void)s;
    FutoInAsyncSteps* as = g_fx.root;
    g_fx.root = NULL;
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, NULL, m_waiter, NULL);
    p->api->add(p, as, m_free_root_inside, NULL);
    as->api->execute(as, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("freed|cancelled");
}

MISUSE_STEP(m_cancel_root_inside, {
    FutoInAsyncSteps* root = d;
    root->api->cancel(root);
    trace("cancel requested");
})

static void root_cancelled_inside_step(void** s)
{
    (void)s;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, as, m_cancel_root_inside, NULL);
    as->api->add(as, "never", f_trace, NULL);
    run_root();
    assert_trace("cancel requested");
}

static FutoInAsyncSteps* g_ghost_root;

static void ghost_cleanup(void* ptr)
{
    (void)ptr;
    g_ghost_root->api->add(g_ghost_root, "ghost", f_trace, NULL);
    g_ghost_root->api->execute(g_ghost_root, NULL, on_unhandled);
}

/* A root's own cleanup that adds to it and executes it while it is freed:
 * ignored (the step ran later inside the next root made from that memory,
 * and the queued task was reset while linked, so another flow lost its turn) */
static void root_used_by_its_cleanup_while_freed(void** s)
{
    (void)s;
    FutoInAsyncSteps* as = g_fx.root;
    g_fx.root = NULL;
    g_ghost_root = as;
    assert_non_null(as->api->stack(as, 8, ghost_cleanup));
    as->api->free(as);
    FutoInAsyncSteps* r2 = futoin_steps_new(g_fx.tool);
    FutoInAsyncSteps* r3 = futoin_steps_new(g_fx.tool);
    r3->api->add(r3, "r3", f_trace, NULL);
    r3->api->execute(r3, NULL, on_unhandled);
    r2->api->add(r2, "r2", f_trace, NULL);
    r2->api->execute(r2, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("r3|r2");
    r2->api->free(r2);
    r3->api->free(r3);
}

/* the cancelled hook may free its root; calls on it after that are refused
 * (an execute() was taken, the deferred free cancelled that run, the hook
 * ran again: futoin_tool_run() never returned) */
static int g_hook_runs;

static void free_then_reuse_hook(FutoInAsyncSteps* root, void* data)
{
    (void)data;
    ++g_hook_runs;
    root->api->free(root);
    root->api->add(root, NULL, f_noop, NULL);
    root->api->execute(root, NULL, NULL);
}

static void root_reused_after_free_in_its_cancelled_hook(void** s)
{
    (void)s;
    FutoInAsyncSteps* r = futoin_steps_new(g_fx.tool);
    futoin_steps_set_cancelled(r, free_then_reuse_hook, NULL);
    r->api->add(r, NULL, f_wait, NULL);
    r->api->execute(r, NULL, NULL);
    futoin_tool_run(g_fx.tool);
    g_hook_runs = 0;
    r->api->cancel(r);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_int_equal(g_hook_runs, 1);
}

static void trace_cleanup(void* ptr)
{
    (void)ptr;
    trace("cleanup");
}

MISUSE_STEP(m_waiter_with_memory, {
    bsi->api->setCancel(bsi, NULL, cancel_tr);
    assert_non_null(bsi->api->stack(bsi, 16, trace_cleanup));
})

/* the fixture's tool and root, for a test that frees them itself */
static FutoInAsyncTool* take_fixture(FutoInAsyncSteps** root)
{
    FutoInAsyncTool* t = g_fx.tool;
    *root = g_fx.root;
    g_fx.root = NULL;
    g_fx.tool = NULL;
    return t;
}

/* The tool freed before its roots and sync objects: reported, and the tool
 * goes with the last of them (its pools held their memory: a crash) */
static void tool_freed_before_its_roots(void** s)
{
    (void)s;
    FutoInAsyncSteps* as;
    FutoInAsyncTool* t = take_fixture(&as);
    FutoInSync* mtx = futoin_mutex_new(t, 1, 0);
    assert_non_null(mtx);
    as->api->addSync(as, mtx, NULL, m_waiter_with_memory, NULL);
    as->api->execute(as, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(t), 0);
    FutoInAsyncSteps* idle = futoin_steps_new(t);
    assert_non_null(idle);
    futoin_tool_free(t);
    as->api->free(as);
    assert_trace("cancelled|cleanup");
    futoin_sync_free(mtx);
    idle->api->free(idle); /* the last: the tool goes now */
}

static void f_free_root(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    FutoInAsyncSteps* root = data;
    trace("ran");
    root->api->free(root);
}

/* A dying tool runs nothing: its first burst run from outside ran the flow,
 * and a step freeing the last root destroyed the tool under the burst */
static void dying_tool_runs_no_burst(void** s)
{
    (void)s;
    FutoInAsyncSteps* as;
    FutoInAsyncTool* t = take_fixture(&as);
    as->api->add(as, as, f_free_root, NULL);
    as->api->execute(as, NULL, on_unhandled);
    futoin_tool_free(t);
    assert_int_equal(futoin_steps_execute_burst(as), 0);
    assert_int_equal(futoin_steps_execute_nested(as), 0);
    assert_int_equal(futoin_steps_unwind_now(as), 0);
    assert_null(futoin_tool_host_next_of(as, NULL, NULL));
    assert_null(futoin_tool_host_next(t, NULL, NULL));
    assert_trace("");
    as->api->free(as); /* the last: the tool goes */
}

/* a call on an outer step's interface while its sub-step runs is
 * out of bounds: the running sub-step fails with InternalError, as the
 * reference's sanity check throws there (not silently ignored) */
static FutoInAsyncSteps* g_outer;
static void cancel_noop(FutoInAsyncSteps* bsi, void* d)
{
    (void)bsi;
    (void)d;
}
static int g_outer_call;
static void m_outer_call(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
    FutoInAsyncSteps* o = g_outer;
    switch (g_outer_call) {
    case 0:
        o->api->add(o, NULL, f_trace, NULL);
        break;
    case 1:
        o->api->success(o, NULL);
        break;
    case 2:
        o->api->setTimeout(o, 5);
        break;
    case 3:
        o->api->waitExternal(o);
        break;
    case 4:
        o->api->handle_error(o, "Mine", NULL);
        break;
    case 5:
        o->api->breakLoop(o, NULL);
        break;
    default:
        o->api->setCancel(o, NULL, cancel_noop);
        break;
    }
}
MISUSE_STEP(m_outer, {
    g_outer = bsi;
    bsi->api->add(bsi, NULL, m_outer_call, NULL);
})

static void outer_step_calls_fail_the_running_sub_step(void** s)
{
    (void)s;
    static const char* const expect[] = {
            "InternalError:add() on an outer step while its sub-steps run",
            "InternalError:success() on an outer step while its sub-steps run",
            "InternalError:setTimeout() on an outer step while its sub-steps run",
            "InternalError:waitExternal() on an outer step while its sub-steps run",
            "InternalError:handle_error() on an outer step while its sub-steps run",
            "InternalError:breakLoop() on an outer step while its sub-steps run",
            "InternalError:setCancel() on an outer step while its sub-steps run",
    };
    for (g_outer_call = 0; g_outer_call < 7; ++g_outer_call) {
        trace_reset();
        run_misuse(m_outer);
        char want[256];
        snprintf(want, sizeof(want), "%s|unhandled:%s", expect[g_outer_call], expect[g_outer_call]);
        assert_trace(want);
    }
}

static void sync_without_api(void** s)
{
    (void)s;
    FutoInSync bad = {NULL};
    g_fx.root->api->add(g_fx.root, NULL, f_noop, NULL);
    g_fx.root->api->addSync(g_fx.root, &bad, NULL, f_noop, NULL);
    run_root();
    assert_trace("");
}

/* add() from outside on a parallel whose branches run, or on a step that
 * waits: the report says which, not "completed step" */
static FutoInAsyncSteps* g_par;
static FutoInAsyncSteps* g_waiting;

MISUSE_STEP(m_par_waits, { g_waiting = bsi; bsi->api->waitExternal(bsi); })

static void add_on_running_parallel_or_waiting_step_says_so(void** s)
{
    (void)s;
    g_par = g_fx.root->api->parallel(g_fx.root, NULL, NULL);
    g_par->api->add(g_par, NULL, m_par_waits, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_non_null(g_waiting);
    stderr_capture();
    g_par->api->add(g_par, NULL, m_par_waits, NULL);
    const char* err = stderr_captured();
    assert_non_null(strstr(err, "add() on a parallel whose branches run"));
    /* on the waiting step itself: it fails, with what was wrong */
    g_waiting->api->add(g_waiting, NULL, m_par_waits, NULL);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("unhandled:InternalError:add() on a step that waits");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(success_after_add),
            T(tool_freed_before_its_roots),
            T(dying_tool_runs_no_burst),
            T(success_twice),
            T(error_twice),
            T(error_after_success),
            T(wait_calls_after_success),
            T(add_after_success),
            T(add_without_callback),
            T(loop_without_body),
            T(repeat_without_body),
            T(add_sync_without_sync),
            T(error_without_code),
            T(set_cancel_without_callback),
            T(execute_on_step),
            T(cancel_on_step),
            T(state_variable_without_name),
            T(calls_on_completed_step_are_ignored),
            T(null_bsi_everywhere),
            T(execute_twice_reports_to_second_callback),
            T(free_of_step_is_ignored),
            T(parallel_misuse_returns_harmless_object),
            T(add_on_running_parallel_or_waiting_step_says_so),
            T(set_timeout_outside_callback_is_ignored),
            T(unhandled_without_callback_drops_flow),
            T(root_freed_from_its_own_callback),
            T(root_freed_inside_step_cancels_flow),
            T(root_cancelled_inside_step),
            T(root_used_by_its_cleanup_while_freed),
            T(root_reused_after_free_in_its_cancelled_hook),
            T(sync_without_api),
            T(outer_step_calls_fail_the_running_sub_step),
    };
    return cmocka_run_group_tests_name("misuse", tests, NULL, NULL);
}
