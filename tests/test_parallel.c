/* parallel(): branches, sibling cancel, its own error handler, ignored args,
 * timeouts inside branches, nesting. */
#include "helpers.h"

static void ext_ok(void* data)
{
    FutoInAsyncSteps* bsi = data;
    trace("done@%u", (unsigned)futoin_tool_now(g_fx.tool));
    bsi->api->success(bsi, NULL);
}

static void wait_ms(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, (uint32_t)(uintptr_t)d, bsi, ext_ok);
}

static void branches_run_concurrently(void** state)
{
    (void)state;
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, NULL);
    p->api->add(p, (void*)(uintptr_t)30, wait_ms, NULL);
    p->api->add(p, (void*)(uintptr_t)10, wait_ms, NULL);
    p->api->add(p, (void*)(uintptr_t)20, wait_ms, NULL);
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    /* total time is the longest branch, not the sum */
    assert_trace("done@10|done@20|done@30|after");
    assert_int_equal(futoin_tool_now(g_fx.tool), 30);
}

static void empty_parallel_completes(void** state)
{
    (void)state;
    g_fx.root->api->parallel(g_fx.root, NULL, NULL);
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("after");
}

static void cancel_tr(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    trace("cancel:%s", (const char*)data);
}

static void wait_cancel(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    bsi->api->setCancel(bsi, d, cancel_tr);
}

static void fail_later(void* data)
{
    FutoInAsyncSteps* bsi = data;
    bsi->api->handle_error(bsi, "Late", "branch");
}

static void wait_then_fail(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 5, bsi, fail_later);
}

static void failure_cancels_siblings_then_parallel_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, "par", eh_recover);
    p->api->add(p, "a", wait_cancel, NULL);
    p->api->add(p, NULL, wait_then_fail, NULL);
    p->api->add(p, "c", wait_cancel, NULL);
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("cancel:a|cancel:c|par:Late|after");
}

static void branch_handler_recovers_branch_only(void** state)
{
    (void)state;
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, "par", eh_trace);
    p->api->add(p, "E", f_fail, eh_recover);
    p->api->add(p, "ok", f_trace, NULL);
    g_fx.root->api->add(g_fx.root, "after", f_trace, NULL);
    run_root();
    assert_trace("E:E|ok|after");
}

static void send_arg(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    FutoInArgs args = args0();
    args.arg0 = val_heap_str("ignored");
    bsi->api->success(bsi, &args);
}

static void recv_check_none(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    trace(a->arg0.type ? "args" : "none");
}

static void branch_args_ignored_and_cleaned(void** state)
{
    (void)state;
    g_heap_cleanups = 0;
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, NULL);
    p->api->add(p, NULL, send_arg, NULL);
    p->api->add(p, NULL, send_arg, NULL);
    g_fx.root->api->add(g_fx.root, NULL, recv_check_none, NULL);
    run_root();
    assert_trace("none");
    assert_int_equal(g_heap_cleanups, 2);
}

static void timeout_branch(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    bsi->api->setTimeout(bsi, 50);
    bsi->api->setCancel(bsi, d, cancel_tr);
}

static void timeout_inside_branch(void** state)
{
    (void)state;
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, eh_trace);
    p->api->add(p, "slow", timeout_branch, NULL);
    p->api->add(p, "other", wait_cancel, NULL);
    run_root();
    assert_trace("cancel:slow|cancel:other|eh:Timeout|unhandled:Timeout:");
    assert_int_equal(futoin_tool_now(g_fx.tool), 50);
}

static void branch_with_substeps(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    const char* name = d;
    bsi->api->add(bsi, (void*)name, f_trace, NULL);
    bsi->api->add(bsi, (void*)name, f_trace, NULL);
}

static void nested_parallel_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a);

static void branches_interleave_their_substeps(void** state)
{
    (void)state;
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, NULL);
    p->api->add(p, "A", branch_with_substeps, NULL);
    p->api->add(p, "B", branch_with_substeps, NULL);
    run_root();
    assert_trace("A|A|B|B");
}

static void nested_parallel_not_started_no_cancel(void** state)
{
    (void)state;
    /* the sibling fails before the nested branches ever ran: nothing to cancel */
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, NULL);
    p->api->add(p, NULL, nested_parallel_step, NULL);
    p->api->add(p, "Boom", f_fail, NULL);
    run_root();
    assert_trace("unhandled:Boom:info");
}

static void nested_parallel_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, "n1", wait_cancel, NULL);
    p->api->add(p, "n2", wait_cancel, NULL);
}

static void nested_parallel_cancelled_innermost_first(void** state)
{
    (void)state;
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, NULL);
    p->api->add(p, NULL, nested_parallel_step, NULL);
    p->api->add(p, NULL, wait_then_fail, NULL);
    run_root();
    assert_trace("cancel:n1|cancel:n2|unhandled:Late:branch");
}

static void root_cancel_reaches_branches(void** state)
{
    (void)state;
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, eh_trace);
    p->api->add(p, "x", wait_cancel, NULL);
    p->api->add(p, "y", wait_cancel, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, on_unhandled);
    futoin_tool_run(g_fx.tool);
    g_fx.root->api->cancel(g_fx.root);
    assert_trace("cancel:x|cancel:y");
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
}

static void parallel_after_error_not_started(void** state)
{
    (void)state;
    g_fx.root->api->add(g_fx.root, "E", f_fail, NULL);
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, NULL);
    p->api->add(p, "never", f_trace, NULL);
    run_root();
    assert_trace("unhandled:E:info");
}

/* the C++ reference's parallel tests (tests/asyncsteps.test.cpp, NitroSteps):
 * at a burst of 1 each branch takes one step per turn, and a loop step runs
 * its first iteration in its own turn */
static int g_fail_12;

static void cpp_fail(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("12");
    bsi->api->handle_error(bsi, "MyError", NULL);
}

static void cpp_branch(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    static const char* const sub[][2] = {{"11", "12"}, {"21", "22"}, {"31", "32"}};
    int n = (int)(uintptr_t)d;
    trace("%d", n);
    bsi->api->add(bsi, (void*)sub[n - 1][0], f_trace, NULL);
    bsi->api->add(bsi, (void*)sub[n - 1][1], n == 1 && g_fail_12 ? cpp_fail : f_trace, NULL);
}

static void cpp_repeat(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)bsi;
    (void)d;
    trace("%d", 40 + (int)i);
}

static void cpp_parallel_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("0:%s", code);
    bsi->api->success(bsi, NULL);
}

static void cpp_parallel(int branches, size_t iterations, int fail_12)
{
    g_fail_12 = fail_12;
    futoin_tool_set_burst(g_fx.tool, 1);
    FutoInAsyncSteps* p = g_fx.root->api->parallel(g_fx.root, NULL, cpp_parallel_eh);
    for (int n = 1; n <= branches; ++n) {
        p->api->add(p, (void*)(uintptr_t)n, cpp_branch, NULL);
    }
    p->api->repeat(p, NULL, iterations, cpp_repeat, NULL);
    g_fx.root->api->add(g_fx.root, "done", f_trace, NULL);
}

static void burst_of_one_interleaves_as_the_cpp_reference(void** state)
{
    (void)state;
    cpp_parallel(3, 3, 0);
    run_root();
    assert_trace("1|2|3|40|11|21|31|41|12|22|32|42|done");
}

static void burst_of_one_fails_as_the_cpp_reference(void** state)
{
    (void)state;
    cpp_parallel(2, 2, 1);
    run_root();
    assert_trace("1|2|40|11|21|41|12|0:MyError|done");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(branches_run_concurrently),
            T(empty_parallel_completes),
            T(failure_cancels_siblings_then_parallel_handler),
            T(branch_handler_recovers_branch_only),
            T(branch_args_ignored_and_cleaned),
            T(timeout_inside_branch),
            T(branches_interleave_their_substeps),
            T(nested_parallel_cancelled_innermost_first),
            T(nested_parallel_not_started_no_cancel),
            T(root_cancel_reaches_branches),
            T(parallel_after_error_not_started),
            T(burst_of_one_interleaves_as_the_cpp_reference),
            T(burst_of_one_fails_as_the_cpp_reference),
    };
    return cmocka_run_group_tests_name("parallel", tests, NULL, NULL);
}
