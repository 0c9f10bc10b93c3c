/* The examples of FTN12 sections 1.1, 1.2, 1.2.1, 1.4 and 3.1-3.6 with their
 * exact printed output. */
#include "helpers.h"

/* ---- 1.1 levels ---- */

static void par_print(FutoInAsyncSteps* bsi, const char* what)
{
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, (void*)what, f_trace, NULL);
}

static void l2_1(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
    trace("Level 2 add #1");
}

static void l1_1(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("Level 1 add #1");
    bsi->api->add(bsi, NULL, l2_1, NULL);
    par_print(bsi, "Level 2 parallel #2");
    bsi->api->add(bsi, "Level 2 add #3", f_trace, NULL);
}

static void l0_1(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("Level 0 add #1");
    bsi->api->add(bsi, NULL, l1_1, NULL);
    par_print(bsi, "Level 1 parallel #2");
    bsi->api->add(bsi, "Level 1 add #3", f_trace, NULL);
}

static void spec_1_1_levels(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, l0_1, NULL);
    par_print(as, "Level 0 parallel #2");
    as->api->add(as, "Level 0 add #3", f_trace, NULL);
    run_root();
    assert_trace("Level 0 add #1|Level 1 add #1|Level 2 add #1|Level 2 parallel #2|"
                 "Level 2 add #3|Level 1 parallel #2|Level 1 add #3|Level 0 parallel #2|"
                 "Level 0 add #3");
}

/* ---- 1.2 error handling ---- */

static void e12_l1(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("Level 1 func");
    bsi->api->handle_error(bsi, "myerror", NULL);
}

static void e12_l1_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("Level 1 onerror: %s", code);
    bsi->api->handle_error(bsi, "newerror", NULL);
}

static void e12_l0(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("Level 0 func");
    bsi->api->add(bsi, NULL, e12_l1, e12_l1_eh);
}

static void e12_l0_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("Level 0 onerror: %s", code);
    FutoInArgs args = args0();
    args.arg0.type = &t_cstr;
    args.arg0.cstr = "Prm";
    args.arg0.length = 3;
    bsi->api->success(bsi, &args);
}

static void e12_func2(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    trace("Level 0 func2: %s", a->arg0.cstr);
    bsi->api->success(bsi, NULL);
}

static void spec_1_2_error_handling(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, e12_l0, e12_l0_eh);
    as->api->add(as, NULL, e12_func2, NULL);
    run_root();
    assert_trace("Level 0 func|Level 1 func|Level 1 onerror: myerror|Level 0 onerror: newerror|"
                 "Level 0 func2: Prm");
}

/* ---- 1.2.1 steps in error handler ---- */

static void e121_l2(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("Level 2 func");
    bsi->api->handle_error(bsi, "second", NULL);
}

static void e121_l2_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)bsi;
    (void)d;
    trace("Level 2 onerror: %s", code);
}

static void e121_l1(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("Level 1 func");
    bsi->api->handle_error(bsi, "first", NULL);
}

static void e121_l1_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("Level 1 onerror: %s", code);
    bsi->api->add(bsi, NULL, e121_l2, e121_l2_eh);
}

static void e121_l0(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("Level 0 func");
    bsi->api->add(bsi, NULL, e121_l1, e121_l1_eh);
}

static void e121_l0_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)bsi;
    (void)d;
    trace("Level 0 onerror: %s", code);
}

static void spec_1_2_1_steps_in_error_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, e121_l0, e121_l0_eh);
    run_root();
    assert_trace("Level 0 func|Level 1 func|Level 1 onerror: first|Level 2 func|"
                 "Level 2 onerror: second|Level 0 onerror: second|unhandled:second:");
}

/* ---- 1.4 parallel abort ---- */

static void p14_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    trace("cancel %s", (const char*)data);
}

static void p14_job(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    trace("job %s", (const char*)d);
    bsi->api->setCancel(bsi, d, p14_cancel);
}

static void p14_after(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
    trace("after");
}

static void spec_1_4_parallel_abort(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, "1", p14_job, NULL);
    p->api->add(p, "2", p14_job, NULL);
    p->api->add(p, "Some Error", f_fail, NULL);
    as->api->add(as, NULL, p14_after, NULL);
    run_root();
    assert_trace("job 1|job 2|cancel 1|cancel 2|unhandled:Some Error:info");
}

/* ---- 3.1 single-level steps ---- */

static void s31_first(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    if (d) {
        FutoInArgs args = args0();
        args.arg0 = val_i32(1);
        args.arg1 = val_i32(2);
        bsi->api->success(bsi, &args);
    } else {
        bsi->api->handle_error(bsi, FUTOIN_ERR_NOT_IMPLEMENTED, NULL);
    }
}

static void s31_external_error(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)bsi;
    (void)d;
    trace("externalError(%s)", code);
}

static void s31_second(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    trace("externalSuccess(%d, %d)", a->arg0.i32, a->arg1.i32);
}

static void spec_3_1_single_level_success(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "something", s31_first, s31_external_error);
    as->api->add(as, NULL, s31_second, NULL);
    run_root();
    assert_trace("externalSuccess(1, 2)");
}

static void spec_3_1_single_level_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, s31_first, s31_external_error);
    as->api->add(as, NULL, s31_second, NULL);
    run_root();
    assert_trace("externalError(NotImplemented)|unhandled:NotImplemented:");
}

/* ---- 3.2 sub-steps ---- */

static void s32_inner2(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    if (d) {
        FutoInArgs args = args0();
        args.arg0 = val_i32(1);
        bsi->api->success(bsi, &args);
    } else {
        bsi->api->handle_error(bsi, FUTOIN_ERR_NOT_IMPLEMENTED, NULL);
    }
}

static void s32_spotted(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)bsi;
    (void)d;
    trace("Spotted error %s", code);
}

static void s32_pass(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    FutoInArgs args = args0();
    args.arg0 = val_i32(a->arg0.i32);
    args.arg1 = val_i32(2);
    bsi->api->success(bsi, &args);
}

static void s32_outer(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    bsi->api->add(bsi, d, s32_inner2, s32_spotted);
    bsi->api->add(bsi, NULL, s32_pass, NULL);
}

static void spec_3_2_sub_steps(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "something", s32_outer, s31_external_error);
    as->api->add(as, NULL, s31_second, NULL);
    run_root();
    assert_trace("externalSuccess(1, 2)");
}

static void spec_3_2_sub_steps_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, s32_outer, s31_external_error);
    as->api->add(as, NULL, s31_second, NULL);
    run_root();
    assert_trace("Spotted error NotImplemented|externalError(NotImplemented)|"
                 "unhandled:NotImplemented:");
}

/* ---- 3.3 parallel and state ---- */

static void* alloc_int(void* data)
{
    (void)data;
    return calloc(1, sizeof(int));
}

static int* state_int(FutoInAsyncSteps* bsi, const char* name)
{
    return bsi->api->stateVariable(bsi, NULL, name, alloc_int, state_free);
}

static void s33_p1(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    *state_int(bsi, "parallel_1") = 1;
}

static void s33_p2(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    *state_int(bsi, "parallel_2") = 2;
}

static void s33_p2_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    (void)code;
    *state_int(bsi, "parallel_2") = 0;
}

static void s33_outer(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, NULL, s33_p1, s32_spotted);
    p->api->add(p, NULL, s33_p2, s33_p2_eh);
}

static void s33_result(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("externalSuccess(%d, %d)", *state_int(bsi, "parallel_1"), *state_int(bsi, "parallel_2"));
}

static void spec_3_3_parallel_and_state(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, s33_outer, s31_external_error);
    as->api->add(as, NULL, s33_result, NULL);
    run_root();
    assert_trace("externalSuccess(1, 2)");
}

/* ---- 3.4 loops ---- */

static const int s34_list[] = {1, 3, 3};

static void s34_print_i(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)bsi;
    (void)d;
    trace("%zu", i);
}

static void s34_print_kv(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)bsi;
    const int* list = d;
    trace("%zu=%d", i, list[i]);
}

static void s34_outer(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->repeat(bsi, NULL, 3, s34_print_i, NULL);
    /* forEach over a list is repeat over its indices in C */
    bsi->api->repeat(bsi, (void*)s34_list, 3, s34_print_kv, NULL);
}

static void spec_3_4_loops(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, s34_outer, NULL);
    run_root();
    assert_trace("0|1|2|0=1|1=3|2=3");
}

/* ---- 3.5 external event wait ---- */

static void s35_external(void* data)
{
    FutoInAsyncSteps* bsi = data;
    trace("callback");
    bsi->api->success(bsi, NULL);
}

static void s35_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 10, bsi, s35_external);
}

static void spec_3_5_external_event_wait(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, s35_step, NULL);
    as->api->add(as, "next", f_trace, NULL);
    run_root();
    assert_trace("callback|next");
    assert_int_equal(futoin_tool_now(g_fx.tool), 10);
}

static void s35_external_err(void* data)
{
    FutoInAsyncSteps* bsi = data;
    bsi->api->handle_error(bsi, "IOError", "disk gone");
}

static void s35_step_err(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 10, bsi, s35_external_err);
}

static void spec_3_5_external_event_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, s35_step_err, NULL);
    as->api->add(as, "next", f_trace, NULL);
    run_root();
    assert_trace("unhandled:IOError:disk gone");
}

/* ---- 3.6 synchronization ---- */

static void s36_critical(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)a;
    trace("critical %s", (const char*)d);
}

static void spec_3_6_synchronization(void** state)
{
    (void)state;
    FutoInSync* mutex = futoin_mutex_new(g_fx.tool, 10, FUTOIN_UNLIMITED);
    FutoInAsyncSteps* as = g_fx.root;
    as->api->addSync(as, mutex, "section", s36_critical, NULL);
    as->api->add(as, "after", f_trace, NULL);
    run_root();
    assert_trace("critical section|after");
    futoin_sync_free(mutex);
}

/* ---- 1.7 last_exception "should be populated with FutoIn errors as well" ---- */

static void le_show(FutoInAsyncSteps* bsi, const char* where)
{
    const FutoInBinaryValue* le = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
    if (le->type && (le->type->flags & FTN_BASE_TYPE_MASK) == FTN_TYPE_STRING) {
        trace("%s: %.*s", where, (int)le->length, le->cstr);
    } else {
        trace("%s: %s", where, le->type ? "other" : "none");
    }
}

static void le_fail(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    bsi->api->handle_error(bsi, d, "info");
}

static void le_own(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    FutoInBinaryValue* le = bsi->api->stateVariable(bsi, NULL, "last_exception", NULL, NULL);
    futoin_reset_binval(le);
    *le = val_heap_str("own exception");
    bsi->api->handle_error(bsi, "OwnError", NULL);
}

static void le_recover(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    (void)code;
    le_show(bsi, "handler");
    bsi->api->success(bsi, NULL);
}

static void le_after(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    le_show(bsi, "after");
    bsi->api->success(bsi, NULL);
}

static void le_timeout(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->setTimeout(bsi, 5);
}

static void spec_1_7_last_exception_holds_futoin_errors(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, le_after, NULL);
    as->api->add(as, "MyError", le_fail, le_recover);
    as->api->add(as, NULL, le_after, NULL);
    as->api->add(as, "Second", le_fail, le_recover);
    as->api->add(as, NULL, le_timeout, le_recover);
    as->api->add(as, NULL, le_own, le_recover);
    g_heap_cleanups = 0;
    as->api->add(as, "Third", le_fail, le_recover);
    run_root();
    assert_trace("after: none|handler: MyError|after: MyError|handler: Second|handler: Timeout|"
                 "handler: own exception|handler: Third");
    assert_int_equal(g_heap_cleanups, 1); /* the next error's code replaced the user's value */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(spec_1_1_levels),
            T(spec_1_2_error_handling),
            T(spec_1_2_1_steps_in_error_handler),
            T(spec_1_4_parallel_abort),
            T(spec_3_1_single_level_success),
            T(spec_3_1_single_level_error),
            T(spec_3_2_sub_steps),
            T(spec_3_2_sub_steps_error),
            T(spec_3_3_parallel_and_state),
            T(spec_3_4_loops),
            T(spec_3_5_external_event_wait),
            T(spec_3_5_external_event_error),
            T(spec_3_6_synchronization),
            T(spec_1_7_last_exception_holds_futoin_errors),
    };
    return cmocka_run_group_tests_name("spec", tests, NULL, NULL);
}
