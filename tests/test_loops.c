/* loop / repeat / breakLoop / continueLoop with labels (spec 1.8, 2.2.4). */
#include "helpers.h"

typedef struct counter
{
    int n;
    int limit;
} counter;

static void body_count_break(FutoInAsyncSteps* bsi, void* d)
{
    counter* c = d;
    if (++c->n >= c->limit) {
        bsi->api->breakLoop(bsi, NULL);
        return;
    }
}

static void loop_until_break(void** state)
{
    (void)state;
    counter c = {0, 5};
    g_fx.root->api->loop(g_fx.root, &c, body_count_break, NULL);
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_int_equal(c.n, 5);
    assert_trace("after");
}

static void rep_trace(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)bsi;
    (void)d;
    trace("%zu", i);
}

static void repeat_counts_from_zero(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 4, rep_trace, NULL);
    run_root();
    assert_trace("0|1|2|3");
}

static void repeat_zero_never_runs(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 0, rep_trace, NULL);
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("after");
}

static void rep_continue_odd(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    if (i % 2) {
        bsi->api->continueLoop(bsi, NULL);
        return;
    }
    trace("%zu", i);
}

static void continue_skips_rest_of_iteration(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 6, rep_continue_odd, NULL);
    run_root();
    assert_trace("0|2|4");
}

static void rep_break_at_2(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    if (i == 2) {
        bsi->api->breakLoop(bsi, NULL);
        return;
    }
    trace("%zu", i);
}

static void break_ends_repeat(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 10, rep_break_at_2, NULL);
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("0|1|after");
}

/* inner loop breaks / continues the OUTER one by label */
static void inner_break_outer(FutoInAsyncSteps* bsi, void* d, size_t j)
{
    size_t i = *(size_t*)d;
    if (i == 1 && j == 1) {
        bsi->api->breakLoop(bsi, "OUTER");
        return;
    }
    trace("%zu.%zu", i, j);
}

static void outer_body(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    size_t* cur = bsi->api->stack(bsi, sizeof(size_t), NULL);
    (void)d;
    *cur = i;
    bsi->api->repeat(bsi, cur, 3, inner_break_outer, "INNER");
    bsi->api->add(bsi, "outer-tail", f_trace, NULL);
}

static void break_to_outer_label(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 3, outer_body, "OUTER");
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("0.0|0.1|0.2|outer-tail|1.0|after");
}

static void inner_continue_outer(FutoInAsyncSteps* bsi, void* d, size_t j)
{
    size_t i = *(size_t*)d;
    if (j == 1) {
        bsi->api->continueLoop(bsi, "OUTER");
        return;
    }
    trace("%zu.%zu", i, j);
}

static void outer_body_cont(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    size_t* cur = bsi->api->stack(bsi, sizeof(size_t), NULL);
    *cur = i;
    bsi->api->repeat(bsi, cur, 3, inner_continue_outer, NULL);
    bsi->api->add(bsi, "never", f_trace, NULL);
}

static void continue_to_outer_label(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 2, outer_body_cont, "OUTER");
    run_root();
    assert_trace("0.0|1.0");
}

static void inner_break_unlabeled(FutoInAsyncSteps* bsi, void* d, size_t j)
{
    (void)d;
    if (j == 1) {
        bsi->api->breakLoop(bsi, NULL);
        return;
    }
    trace("in%zu", j);
}

static void outer_body_inner_break(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    trace("out%zu", i);
    bsi->api->repeat(bsi, NULL, 5, inner_break_unlabeled, NULL);
}

static void unlabeled_break_leaves_innermost_only(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 2, outer_body_inner_break, "OUTER");
    run_root();
    assert_trace("out0|in0|out1|in0");
}

static void break_outside_loop_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->breakLoop(bsi, "X");
}

static void break_outside_loop_unwinds_as_error(void** state)
{
    (void)state;
    g_fx.root->api->add(g_fx.root, NULL, break_outside_loop_step, eh_trace);
    run_root();
    assert_trace("eh:LoopBreak|unhandled:LoopBreak:X");
}

static void body_break_unknown(FutoInAsyncSteps* bsi, void* d)
{
    (void)d;
    bsi->api->breakLoop(bsi, "NOPE");
}

static void break_unknown_label_unwinds_as_error(void** state)
{
    (void)state;
    g_fx.root->api->loop(g_fx.root, NULL, body_break_unknown, "L");
    run_root();
    assert_trace("unhandled:LoopBreak:NOPE");
}

static void body_error(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    if (i == 1) {
        bsi->api->handle_error(bsi, "InLoop", "i=1");
        return;
    }
    trace("%zu", i);
}

static void error_inside_loop_ends_loop(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 3, body_error, NULL);
    g_fx.root->api->add(g_fx.root, "never", f_trace, NULL);
    run_root();
    assert_trace("0|unhandled:InLoop:i=1");
}

static void body_substeps_break(FutoInAsyncSteps* bsi, void* d)
{
    counter* c = d;
    if (c->n++ == 3) {
        bsi->api->add(bsi, NULL, break_outside_loop_step, NULL); /* breaks label X */
        return;
    }
    bsi->api->add(bsi, "sub", f_trace, NULL);
}

static void break_from_substep_with_label(void** state)
{
    (void)state;
    counter c = {0, 0};
    g_fx.root->api->loop(g_fx.root, &c, body_substeps_break, "X");
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("sub|sub|sub|after");
}

static void body_wait_ext(FutoInAsyncSteps* bsi, void* d, size_t i);

static void ext_resume(void* data)
{
    FutoInAsyncSteps* bsi = data;
    bsi->api->success(bsi, NULL);
}

static void body_wait_ext(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    trace("%zu@%u", i, (unsigned)futoin_tool_now(g_fx.tool));
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 10, bsi, ext_resume);
}

static void loop_with_external_waits(void** state)
{
    (void)state;
    g_fx.root->api->repeat(g_fx.root, NULL, 3, body_wait_ext, NULL);
    run_root();
    assert_trace("0@0|1@10|2@20");
}

/* break/continue from outside, on a waiting step (an event's callback on the
 * loop thread), as futoin-asyncsteps takes them: they were InternalError */
static void ext_continue(void* data)
{
    FutoInAsyncSteps* bsi = data;
    trace("continue");
    bsi->api->continueLoop(bsi, NULL);
}

static void ext_break(void* data)
{
    FutoInAsyncSteps* bsi = data;
    trace("break");
    bsi->api->breakLoop(bsi, "L");
}

static void body_ext_ctl(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    trace("i%zu", i);
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 5, bsi, i == 0 ? ext_continue : ext_break);
}

static void loop_control_from_outside_a_callback(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    r->api->repeat(r, NULL, 5, body_ext_ctl, "L");
    r->api->add(r, "after", f_trace, NULL);
    run_root();
    assert_trace("i0|continue|i1|break|after");
}

static void body_break_with_eh_inside(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    (void)i;
    bsi->api->add(bsi, NULL, break_outside_loop_step, eh_trace);
}

static void loop_control_seen_by_inner_handlers(void** state)
{
    (void)state;
    /* handlers between break and the loop see LoopBreak like any error */
    g_fx.root->api->repeat(g_fx.root, NULL, 5, body_break_with_eh_inside, "X");
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("eh:LoopBreak|after");
}

static void rep_success_args(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    (void)i;
    FutoInArgs args = args0();
    args.arg0 = val_heap_str("iteration");
    bsi->api->success(bsi, &args);
}

static void recv_none(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    trace(a->arg0.type ? "args" : "none");
}

static void loop_completes_without_args(void** state)
{
    (void)state;
    g_heap_cleanups = 0;
    g_fx.root->api->repeat(g_fx.root, NULL, 3, rep_success_args, NULL);
    g_fx.root->api->add(g_fx.root, NULL, recv_none, NULL);
    run_root();
    assert_trace("none");
    assert_int_equal(g_heap_cleanups, 3);
}

static void body_loop_label_copy(FutoInAsyncSteps* bsi, void* d)
{
    (void)d;
    bsi->api->breakLoop(bsi, "COPIED");
}

static void loop_label_is_copied(void** state)
{
    (void)state;
    char label[16];
    strcpy(label, "COPIED");
    g_fx.root->api->loop(g_fx.root, NULL, body_loop_label_copy, label);
    strcpy(label, "CHANGED");
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("after");
}

static void body_break_with_exception(FutoInAsyncSteps* bsi, void* d)
{
    (void)d;
    FutoInBinaryValue* le = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
    futoin_reset_binval(le);
    *le = val_heap_str("exception of the break");
    bsi->api->breakLoop(bsi, NULL);
}

static void check_last_exception(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    FutoInBinaryValue* le = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
    trace(le->type ? "kept" : "cleared");
}

static void handled_loop_control_clears_last_exception(void** state)
{
    (void)state;
    g_heap_cleanups = 0;
    g_fx.root->api->loop(g_fx.root, NULL, body_break_with_exception, NULL);
    g_fx.root->api->add(g_fx.root, NULL, check_last_exception, NULL);
    run_root();
    assert_trace("cleared"); /* as the JS reference: a handled break is no failure */
    assert_int_equal(g_heap_cleanups, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(loop_until_break),
            T(repeat_counts_from_zero),
            T(repeat_zero_never_runs),
            T(continue_skips_rest_of_iteration),
            T(break_ends_repeat),
            T(break_to_outer_label),
            T(continue_to_outer_label),
            T(unlabeled_break_leaves_innermost_only),
            T(break_outside_loop_unwinds_as_error),
            T(break_unknown_label_unwinds_as_error),
            T(error_inside_loop_ends_loop),
            T(break_from_substep_with_label),
            T(loop_with_external_waits),
            T(loop_control_from_outside_a_callback),
            T(loop_control_seen_by_inner_handlers),
            T(loop_completes_without_args),
            T(loop_label_is_copied),
            T(handled_loop_control_clears_last_exception),
    };
    return cmocka_run_group_tests_name("loops", tests, NULL, NULL);
}
