/* Every AsyncSteps slot through the binary interface: args and ownership,
 * errors, timeouts, cancel, state, stack, control API, root-level use. */
#include "helpers.h"

/* ---- success args of every type ---- */

static void send_all_types(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    FutoInArgs args = args0();
    args.arg0.type = &t_bool;
    args.arg0.b = true;
    args.arg1.type = &t_i8;
    args.arg1.i8 = -8;
    args.arg2.type = &t_i16;
    args.arg2.i16 = -16;
    args.arg3.type = &t_i64;
    args.arg3.i64 = INT64_MIN;
    bsi->api->success(bsi, &args);
    /* moved: the caller's args are zeroed */
    for (int i = 0; i < 4; ++i) {
        assert_null(args.args[i].type);
        assert_int_equal(args.args[i].u64, 0);
    }
}

static void recv_all_types(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    assert_int_equal(a->arg0.type->flags, FTN_TYPE_BOOL);
    assert_true(a->arg0.b);
    assert_int_equal(a->arg1.i8, -8);
    assert_int_equal(a->arg2.i16, -16);
    assert_true(a->arg3.i64 == INT64_MIN);
    FutoInArgs args = args0();
    args.arg0.type = &t_u8;
    args.arg0.u8 = 255;
    args.arg1.type = &t_u16;
    args.arg1.u16 = 65535;
    args.arg2.type = &t_u32;
    args.arg2.u32 = 4000000000u;
    args.arg3.type = &t_u64;
    args.arg3.u64 = UINT64_MAX;
    bsi->api->success(bsi, &args);
}

static void recv_unsigned(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    assert_int_equal(a->arg0.u8, 255);
    assert_int_equal(a->arg1.u16, 65535);
    assert_int_equal(a->arg2.u32, 4000000000u);
    assert_true(a->arg3.u64 == UINT64_MAX);
    FutoInArgs args = args0();
    args.arg0.type = &t_float;
    args.arg0.f = 1.5f;
    args.arg1.type = &t_double;
    args.arg1.d = -2.25;
    args.arg2.type = &t_i32;
    args.arg2.i32 = INT32_MIN;
    bsi->api->success(bsi, &args);
}

static void recv_float(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    assert_true(a->arg0.f == 1.5f);
    assert_true(a->arg1.d == -2.25);
    assert_int_equal(a->arg2.i32, INT32_MIN);
    assert_null(a->arg3.type);
    trace("ok");
}

static void args_every_primitive_type(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, send_all_types, NULL);
    as->api->add(as, NULL, recv_all_types, NULL);
    as->api->add(as, NULL, recv_unsigned, NULL);
    as->api->add(as, NULL, recv_float, NULL);
    run_root();
    assert_trace("ok");
}

static void send_strings_arrays(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    FutoInArgs args = args0();
    args.arg0 = val_heap_str("hello");
    int32_t* arr = malloc(3 * sizeof(int32_t));
    arr[0] = 1;
    arr[1] = 2;
    arr[2] = 3;
    args.arg1.type = &t_heap_i32_array;
    args.arg1.p = arr;
    args.arg1.length = 3;
    char16_t* s16 = malloc(3 * sizeof(char16_t));
    s16[0] = u'h';
    s16[1] = u'\u00e9';
    s16[2] = 0;
    args.arg2.type = &t_heap_str16;
    args.arg2.cstr16 = s16;
    args.arg2.length = 2;
    char32_t* s32 = malloc(2 * sizeof(char32_t));
    s32[0] = U'\U0001F600';
    s32[1] = 0;
    args.arg3.type = &t_heap_str32;
    args.arg3.cstr32 = s32;
    args.arg3.length = 1;
    bsi->api->success(bsi, &args);
}

static void recv_strings_arrays(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    assert_string_equal(a->arg0.cstr, "hello");
    assert_int_equal(a->arg0.length, 5);
    assert_int_equal(a->arg1.type->flags, FTN_TYPE_INT32 | FTN_TYPE_ARRAY);
    assert_int_equal(a->arg1.length, 3);
    assert_int_equal(((const int32_t*)a->arg1.p)[2], 3);
    assert_int_equal(a->arg2.cstr16[1], 0xe9);
    assert_int_equal(a->arg2.length, 2);
    assert_int_equal(a->arg3.cstr32[0], 0x1F600);
    assert_int_equal(g_heap_cleanups, 0); /* still owned until we return */
}

static void args_strings_arrays_cleaned_after_receiver(void** state)
{
    (void)state;
    g_heap_cleanups = 0;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, send_strings_arrays, NULL);
    as->api->add(as, NULL, recv_strings_arrays, NULL);
    run_root();
    assert_int_equal(g_heap_cleanups, 4);
}

static FutoInBinaryValue g_kept;

static void recv_keep(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    /* keep the value: take it and zero the slot */
    FutoInArgs* mut = (FutoInArgs*)a;
    g_kept = mut->arg0;
    memset(&mut->arg0, 0, sizeof(mut->arg0));
}

static void send_one_str(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    FutoInArgs args = args0();
    args.arg0 = val_heap_str((const char*)d);
    bsi->api->success(bsi, &args);
}

static void args_receiver_may_keep_value(void** state)
{
    (void)state;
    g_heap_cleanups = 0;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "kept", send_one_str, NULL);
    as->api->add(as, NULL, recv_keep, NULL);
    run_root();
    assert_int_equal(g_heap_cleanups, 0);
    assert_string_equal(g_kept.cstr, "kept");
    futoin_reset_binval(&g_kept);
    assert_int_equal(g_heap_cleanups, 1);
}

static void args_unused_are_cleaned_with_flow(void** state)
{
    (void)state;
    g_heap_cleanups = 0;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "last", send_one_str, NULL); /* nobody receives */
    run_root();
    assert_int_equal(g_heap_cleanups, 1);
}

static void recv_print_str(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    trace("got:%s", a->arg0.type ? a->arg0.cstr : "none");
}

static void sub_sender(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->add(bsi, "from-inner", send_one_str, NULL);
}

static void args_last_substep_result_flows_to_parent_next(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, sub_sender, NULL);
    as->api->add(as, NULL, recv_print_str, NULL);
    run_root();
    assert_trace("got:from-inner");
}

static void args_implicit_success_passes_nothing(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, f_noop, NULL);
    as->api->add(as, NULL, recv_print_str, NULL);
    run_root();
    assert_trace("got:none");
}

static void success_null_args(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->success(bsi, NULL);
}

static void args_success_with_null_means_none(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, success_null_args, NULL);
    as->api->add(as, NULL, recv_print_str, NULL);
    run_root();
    assert_trace("got:none");
}

/* ---- errors ---- */

static void eh_info(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("%s:%s", code, error_info(bsi));
}

static void error_info_is_stored(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "Boom", f_fail, eh_info);
    run_root();
    assert_trace("Boom:info|unhandled:Boom:info");
}

static void fail_null_info(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->handle_error(bsi, "NoInfo", NULL);
}

static void error_null_info_is_empty_string(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, fail_null_info, eh_info);
    run_root();
    assert_trace("NoInfo:|unhandled:NoInfo:");
}

static void error_info_unset_is_empty_string(void** state)
{
    (void)state;
    const char* info = error_info(g_fx.root);
    assert_non_null(info);
    assert_string_equal(info, "");
}

static void eh_rethrow_same(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    /* pass back the very pointers received: the engine must copy safely */
    bsi->api->handle_error(bsi, code, error_info(bsi));
}

static void error_handler_may_rethrow_received_pointers(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "Again", f_fail, eh_rethrow_same);
    run_root();
    assert_trace("unhandled:Again:info");
}

static void recover_with_value(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    (void)code;
    FutoInArgs args = args0();
    args.arg0 = val_heap_str("recovered");
    bsi->api->success(bsi, &args);
}

static void error_handler_success_continues_with_args(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "E", f_fail, recover_with_value);
    as->api->add(as, NULL, recv_print_str, NULL);
    run_root();
    assert_trace("got:recovered");
}

static void adds_failing_sub(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    bsi->api->add(bsi, d, f_fail, NULL);
    bsi->api->add(bsi, "not reached", f_trace, NULL);
}

static void error_skips_remaining_substeps(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "Inner", adds_failing_sub, eh_recover);
    as->api->add(as, "next", f_trace, NULL);
    run_root();
    assert_trace("Inner:Inner|next");
}

static void eh_adds_failing(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    trace("eh1:%s", code);
    bsi->api->add(bsi, "Second", f_fail, eh_trace);
}

static void error_handler_adds_steps_that_fail_again(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "First", f_fail, eh_adds_failing);
    run_root();
    assert_trace("eh1:First|Second:Second|unhandled:Second:info");
}

static void eh_adds_ok(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    (void)code;
    bsi->api->add(bsi, "alt-path", send_one_str, NULL);
}

static void error_handler_adds_steps_success(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "E", f_fail, eh_adds_ok);
    as->api->add(as, NULL, recv_print_str, NULL);
    run_root();
    assert_trace("got:alt-path");
}

/* ---- timeouts, cancel handlers, waitExternal ---- */

static void cancel_trace(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    trace("cancel:%s", data ? (const char*)data : "");
}

static void step_timeout(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    bsi->api->setTimeout(bsi, 1000);
    bsi->api->setCancel(bsi, d, cancel_trace);
}

static void timeout_raises_timeout_after_cancel_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "io", step_timeout, eh_trace);
    run_root();
    assert_trace("cancel:io|io:Timeout|unhandled:Timeout:");
    assert_int_equal(futoin_tool_now(g_fx.tool), 1000);
}

static void ext_success_cb(void* data)
{
    FutoInAsyncSteps* bsi = data;
    FutoInArgs args = args0();
    args.arg0 = val_heap_str("in-time");
    bsi->api->success(bsi, &args);
}

static void step_timeout_but_completes(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->setTimeout(bsi, 1000);
    bsi->api->sched_deferred(bsi, 500, bsi, ext_success_cb);
}

static void timeout_cancelled_by_success(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, step_timeout_but_completes, eh_trace);
    as->api->add(as, NULL, recv_print_str, NULL);
    run_root();
    assert_trace("got:in-time");
    /* the timeout timer was removed: run() ended at 500, not 1000 */
    assert_int_equal(futoin_tool_now(g_fx.tool), 500);
}

static void ext_restart_timeout_cb(void* data)
{
    FutoInAsyncSteps* bsi = data;
    bsi->api->setTimeout(bsi, 100); /* from outside: the waiting step's new deadline */
}

static void step_timeout_restarted(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->setTimeout(bsi, 1000);
    bsi->api->sched_deferred(bsi, 500, bsi, ext_restart_timeout_cb);
}

/* setTimeout() on a waiting step from outside restarts its timeout, as
 * futoin-asyncsteps allows (a deadline pushed back on progress) */
static void timeout_restarted_from_outside(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "io", step_timeout_restarted, eh_trace);
    run_root();
    assert_trace("io:Timeout|unhandled:Timeout:");
    assert_int_equal(futoin_tool_now(g_fx.tool), 600);
}

static void ext_wait_again_cb(void* data)
{
    FutoInAsyncSteps* bsi = data;
    bsi->api->waitExternal(bsi); /* it waits already: nothing to do */
    bsi->api->sched_deferred(bsi, 10, bsi, ext_success_cb);
}

static void step_waits_told_again(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 5, bsi, ext_wait_again_cb);
}

/* waitExternal() on a waiting step from outside is harmless, as in
 * futoin-asyncsteps */
static void wait_external_again_from_outside_is_harmless(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "w", step_waits_told_again, eh_trace);
    as->api->add(as, NULL, recv_print_str, NULL);
    run_root();
    assert_trace("got:in-time");
}

static void timed_parent(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->setTimeout(bsi, 100);
    bsi->api->add(bsi, "inner", f_wait, eh_trace);
}

static void timeout_of_parent_unwinds_through_children(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "outer", timed_parent, eh_recover);
    as->api->add(as, "after", f_trace, NULL);
    run_root();
    assert_trace("inner|inner:Timeout|outer:Timeout|after");
}

static void implicit_success_disabled_by_wait(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, "w", f_wait, NULL);
    as->api->add(as, "never", f_trace, NULL);
    as->api->execute(as, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    /* the flow waits for an external event; run() returned */
    assert_trace("w");
    as->api->cancel(as);
}

static void set_cancel_only(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    trace("waiting");
    bsi->api->setCancel(bsi, d, cancel_trace);
}

static void cancel_runs_cancel_handlers_innermost_first(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, timed_parent, eh_trace); /* outer has a timer */
    as->api->execute(as, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    trace_reset();
    as->api->cancel(as);
    assert_trace(""); /* no error handlers, f_wait has no cancel handler */
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_int_equal(futoin_tool_now(g_fx.tool), 0); /* timer gone */
}

static void nested_cancel_parent(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->add(bsi, "inner", set_cancel_only, eh_trace);
    bsi->api->setCancel(bsi, "outer", cancel_trace);
}

static void cancel_order_innermost_first(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, nested_cancel_parent, eh_trace);
    as->api->execute(as, NULL, on_unhandled);
    futoin_tool_iterate(g_fx.tool, 0);
    as->api->cancel(as);
    assert_trace("waiting|cancel:inner|cancel:outer");
    /* the root can be reused after cancel */
    trace_reset();
    as->api->add(as, "again", f_trace, NULL);
    run_root();
    assert_trace("again");
}

static void cancel_idle_root_is_noop(void** state)
{
    (void)state;
    g_fx.root->api->cancel(g_fx.root);
    g_fx.root->api->add(g_fx.root, "x", f_trace, NULL);
    run_root();
    assert_trace("x");
}

/* ---- state variables ---- */

static int g_alloc_calls, g_cleanup_calls;
static void* sv_alloc(void* data)
{
    ++g_alloc_calls;
    int* v = malloc(sizeof(int));
    *v = *(int*)data;
    return v;
}
static void sv_cleanup(void* data, void* value)
{
    (void)data;
    ++g_cleanup_calls;
    free(value);
}

static void sv_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    int init = 42;
    int* v1 = bsi->api->stateVariable(bsi, &init, "counter", sv_alloc, sv_cleanup);
    int* v2 = bsi->api->stateVariable(bsi, &init, "counter", sv_alloc, sv_cleanup);
    assert_ptr_equal(v1, v2);
    ++*v1;
}

static void state_variable_allocated_once_per_root(void** state)
{
    (void)state;
    g_alloc_calls = g_cleanup_calls = 0;
    FutoInAsyncSteps* as = g_fx.root;
    int init = 1;
    int* v = as->api->stateVariable(as, &init, "counter", sv_alloc, sv_cleanup);
    assert_int_equal(*v, 1);
    as->api->add(as, NULL, sv_step, NULL);
    as->api->add(as, NULL, sv_step, NULL);
    run_root();
    assert_int_equal(*v, 3);
    assert_int_equal(g_alloc_calls, 1);
    assert_int_equal(g_cleanup_calls, 0);
    as->api->free(as);
    g_fx.root = NULL;
    assert_int_equal(g_cleanup_calls, 1);
}

static void* sv_alloc_fails(void* data)
{
    (void)data;
    ++g_alloc_calls;
    return NULL;
}

/* an allocator that gives NULL made nothing: no variable, no cleanup, and
 * the next call tries again */
static void state_variable_whose_allocator_fails_is_not_kept(void** state)
{
    (void)state;
    g_alloc_calls = g_cleanup_calls = 0;
    FutoInAsyncSteps* as = g_fx.root;
    assert_null(as->api->stateVariable(as, NULL, "v", sv_alloc_fails, sv_cleanup));
    assert_null(as->api->stateVariable(as, NULL, "v", NULL, NULL));
    int init = 7;
    int* v = as->api->stateVariable(as, &init, "v", sv_alloc, sv_cleanup);
    assert_non_null(v);
    assert_int_equal(*v, 7);
    assert_int_equal(g_alloc_calls, 2);
    as->api->free(as);
    g_fx.root = NULL;
    assert_int_equal(g_cleanup_calls, 1);
}

/* the predefined variables are the same with an allocator given (it was a
 * separate variable, so C code reading error_info that way saw garbage) */
static void predefined_state_variables_ignore_the_allocator(void** state)
{
    (void)state;
    g_alloc_calls = 0;
    FutoInAsyncSteps* as = g_fx.root;
    int init = 1;
    assert_ptr_equal(as->api->stateVariable(as, &init, "error_info", sv_alloc, sv_cleanup),
                     as->api->stateVariable(as, NULL, "error_info", NULL, NULL));
    assert_ptr_equal(as->api->stateVariable(as, &init, "last_exception", sv_alloc, sv_cleanup),
                     as->api->stateVariable(as, NULL, "last_exception", NULL, NULL));
    assert_int_equal(g_alloc_calls, 0);
}

/* futoin_steps_error_gen() moves with each error the engine records (a
 * wrapper mirroring error_info refreshes only then) and stays otherwise */
static uint32_t g_gens[4];

static void f_gen(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    g_gens[(uintptr_t)data] = futoin_steps_error_gen(bsi);
}

static void error_gen_moves_with_each_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, (void*)0, f_gen, NULL);
    as->api->add(as, (void*)1, f_gen, NULL);
    as->api->add(as, "A", f_fail, eh_recover);
    as->api->add(as, (void*)2, f_gen, NULL);
    as->api->add(as, "B", f_fail, eh_recover);
    as->api->add(as, (void*)3, f_gen, NULL);
    run_root();
    assert_trace("A:A|B:B");
    assert_int_equal(g_gens[1], g_gens[0]);
    assert_int_not_equal(g_gens[2], g_gens[1]);
    assert_int_not_equal(g_gens[3], g_gens[2]);
}

static void state_variable_lookup_without_allocate(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    assert_null(as->api->stateVariable(as, NULL, "missing", NULL, NULL));
    FutoInBinaryValue* le = as->api->stateVariable(as, NULL, "last_exception", NULL, NULL);
    assert_non_null(le);
    assert_null(le->type);
    *le = val_heap_str("exception object");
    g_heap_cleanups = 0;
    as->api->free(as);
    g_fx.root = NULL;
    assert_int_equal(g_heap_cleanups, 1);
}

static void* sv_branch_read(FutoInAsyncSteps* bsi)
{
    return bsi->api->stateVariable(bsi, NULL, "shared", NULL, NULL);
}

static void sv_branch(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    assert_ptr_equal(sv_branch_read(bsi), d);
}

static void state_shared_by_parallel_branches(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    int init = 5;
    void* v = as->api->stateVariable(as, &init, "shared", sv_alloc, sv_cleanup);
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, v, sv_branch, NULL);
    p->api->add(p, v, sv_branch, NULL);
    run_root();
    assert_trace("");
}

/* ---- stack() ---- */

static void stack_cleanup(void* value)
{
    trace("free:%s", (const char*)value);
}

static void* stack_str(FutoInAsyncSteps* bsi, const char* s)
{
    char* p = bsi->api->stack(bsi, strlen(s) + 1, stack_cleanup);
    assert_non_null(p);
    assert_int_equal(((uintptr_t)p) % _Alignof(max_align_t), 0);
    strcpy(p, s);
    return p;
}

static void stack_inner_fail(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    stack_str(bsi, "inner");
    bsi->api->handle_error(bsi, "E", NULL);
}

static void stack_outer(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    stack_str(bsi, "outer");
    bsi->api->add(bsi, NULL, stack_inner_fail, NULL);
}

static void stack_outer_eh(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)bsi;
    (void)d;
    trace("eh:%s", code);
}

static void stack_lifetimes_across_errors(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    stack_str(as, "root");
    as->api->add(as, NULL, stack_outer, stack_outer_eh);
    run_root();
    /* failing sub-step's memory goes before the parent's handler; the
     * parent's own lives through its handler */
    assert_trace("free:inner|eh:E|free:outer|unhandled:E:");
    trace_reset();
    as->api->free(as);
    g_fx.root = NULL;
    assert_trace("free:root");
}

/* sizes on each side of the pool's zeroing tiers (32, 64, 128 bytes) */
static const size_t k_stack_sizes[] = {1, 32, 33, 48, 64, 65, 128, 129};

static void stack_dirty_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    for (size_t k = 0; k < sizeof(k_stack_sizes) / sizeof(k_stack_sizes[0]); ++k) {
        memset(bsi->api->stack(bsi, k_stack_sizes[k], NULL), 0xff, k_stack_sizes[k]);
    }
}

/* pooled blocks come back dirty from the step before: zeroed again */
static void stack_zeroed_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    for (size_t k = 0; k < sizeof(k_stack_sizes) / sizeof(k_stack_sizes[0]); ++k) {
        unsigned char* p = bsi->api->stack(bsi, k_stack_sizes[k], NULL);
        for (size_t i = 0; i < k_stack_sizes[k]; ++i) {
            assert_int_equal(p[i], 0);
        }
    }
    stack_str(bsi, "a");
    stack_str(bsi, "b");
}

static void stack_zeroed_and_freed_newest_first(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, stack_dirty_step, NULL);
    as->api->add(as, NULL, stack_zeroed_step, NULL);
    run_root();
    assert_trace("free:b|free:a");
}

/* ---- control API ---- */

static void root_id_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    ptrdiff_t* out = d;
    *out = bsi->api->rootId(bsi);
}

static void root_id_same_in_flow_different_in_branches(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    ptrdiff_t ids[4] = {0, 0, 0, 0};
    as->api->add(as, &ids[0], root_id_step, NULL);
    as->api->add(as, &ids[1], root_id_step, NULL);
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, &ids[2], root_id_step, NULL);
    p->api->add(p, &ids[3], root_id_step, NULL);
    run_root();
    assert_true(ids[0] != 0);
    assert_true(ids[0] == ids[1]);
    assert_true(ids[0] == as->api->rootId(as));
    assert_true(ids[2] != ids[0] && ids[3] != ids[0] && ids[2] != ids[3]);
}

static FutoInAsyncSteps* g_saved_bsi;
static void save_bsi(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    g_saved_bsi = bsi;
    assert_true(bsi->api->isValid(bsi));
    bsi->api->waitExternal(bsi);
}

static void is_valid_tracks_step_life(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, save_bsi, NULL);
    as->api->execute(as, NULL, on_unhandled);
    futoin_tool_run(g_fx.tool);
    assert_true(g_saved_bsi->api->isValid(g_saved_bsi));
    g_saved_bsi->api->success(g_saved_bsi, NULL);
    futoin_tool_run(g_fx.tool);
    assert_false(g_saved_bsi->api->isValid(g_saved_bsi));
    assert_true(as->api->isValid(as));
    assert_false(as->api->isValid(NULL));
}

/* isValid() as the C++ reference's bool cast: a root while it is not
 * executing, a step while it is the innermost one running (not while its
 * sub-steps run, not once it ended) */
static FutoInAsyncSteps* g_valid_outer;

static void valid_inner(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("inner:%d,outer:%d,root:%d", bsi->api->isValid(bsi), g_valid_outer->api->isValid(g_valid_outer),
          g_fx.root->api->isValid(g_fx.root));
}

static void valid_outer(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    g_valid_outer = bsi;
    trace("outer:%d,root:%d", bsi->api->isValid(bsi), g_fx.root->api->isValid(g_fx.root));
    bsi->api->add(bsi, NULL, valid_inner, NULL);
}

static void valid_after(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("outer after:%d,this:%d", g_valid_outer->api->isValid(g_valid_outer), bsi->api->isValid(bsi));
}

static void is_valid_as_the_reference_bool_cast(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, valid_outer, NULL);
    as->api->add(as, NULL, valid_after, NULL);
    as->api->add(as, "w", f_wait, NULL);
    assert_true(as->api->isValid(as));
    as->api->execute(as, NULL, on_unhandled);
    assert_false(as->api->isValid(as)); /* scheduled: executing */
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("outer:1,root:0|inner:1,outer:0,root:0|outer after:0,this:1|w");
    assert_false(as->api->isValid(as)); /* waiting: still executing */
    as->api->cancel(as);
    assert_true(as->api->isValid(as)); /* done: usable again */
}

/* cancel() of the root inside its own step: the step is cancelled at once
 * (its callback still runs): no longer valid, and it says so */
static void valid_self_cancel(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    trace("before:%d,%d", bsi->api->isValid(bsi), futoin_steps_is_cancelled(bsi));
    g_fx.root->api->cancel(g_fx.root);
    trace("after:%d,%d", bsi->api->isValid(bsi), futoin_steps_is_cancelled(bsi));
    bsi->api->add(bsi, "dropped", f_trace, NULL);
}

static void is_valid_false_once_its_root_is_cancelled(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    as->api->add(as, NULL, valid_self_cancel, NULL);
    as->api->add(as, "never", f_trace, NULL);
    run_root();
    assert_trace("before:1,0|after:0,1");
    assert_true(as->api->isValid(as)); /* idle again */
    assert_false(futoin_steps_is_cancelled(as));
}

static void new_instance_runs_independently(void** state)
{
    (void)state;
    FutoInAsyncSteps* other = g_fx.root->api->newInstance(g_fx.root);
    assert_non_null(other);
    assert_true(other != g_fx.root);
    assert_ptr_equal(futoin_steps_tool(other), g_fx.tool);
    other->api->add(other, "other", f_trace, NULL);
    g_fx.root->api->add(g_fx.root, "root", f_trace, NULL);
    other->api->execute(other, NULL, NULL);
    run_root();
    assert_trace("other|root");
    assert_true(other->api->rootId(other) != g_fx.root->api->rootId(g_fx.root));
    other->api->free(other);
}

static void rl_repeat(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)bsi;
    (void)d;
    trace("r%zu", i);
}

static void rl_loop(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)a;
    (void)d;
    bsi->api->breakLoop(bsi, NULL);
}

static void rl_loop_body(FutoInAsyncSteps* bsi, void* d)
{
    (void)d;
    trace("loop");
    bsi->api->add(bsi, NULL, rl_loop, NULL);
}

static void root_level_use_before_execute(void** state)
{
    (void)state;
    FutoInAsyncSteps* as = g_fx.root;
    stack_str(as, "root-mem");
    int init = 7;
    int* v = as->api->stateVariable(as, &init, "v", sv_alloc, sv_cleanup);
    assert_int_equal(*v, 7);
    as->api->add(as, "a", f_trace, NULL);
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, "p1", f_trace, NULL);
    as->api->repeat(as, NULL, 2, rl_repeat, NULL);
    as->api->loop(as, NULL, rl_loop_body, NULL);
    run_root();
    assert_trace("a|p1|r0|r1|loop");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(args_every_primitive_type),
            T(args_strings_arrays_cleaned_after_receiver),
            T(args_receiver_may_keep_value),
            T(args_unused_are_cleaned_with_flow),
            T(args_last_substep_result_flows_to_parent_next),
            T(args_implicit_success_passes_nothing),
            T(args_success_with_null_means_none),
            T(error_info_is_stored),
            T(error_null_info_is_empty_string),
            T(error_info_unset_is_empty_string),
            T(error_handler_may_rethrow_received_pointers),
            T(error_handler_success_continues_with_args),
            T(error_skips_remaining_substeps),
            T(error_handler_adds_steps_that_fail_again),
            T(error_handler_adds_steps_success),
            T(timeout_raises_timeout_after_cancel_handler),
            T(timeout_cancelled_by_success),
            T(timeout_restarted_from_outside),
            T(wait_external_again_from_outside_is_harmless),
            T(timeout_of_parent_unwinds_through_children),
            T(implicit_success_disabled_by_wait),
            T(cancel_runs_cancel_handlers_innermost_first),
            T(cancel_order_innermost_first),
            T(cancel_idle_root_is_noop),
            T(state_variable_allocated_once_per_root),
            T(state_variable_lookup_without_allocate),
            T(predefined_state_variables_ignore_the_allocator),
            T(error_gen_moves_with_each_error),
            T(state_variable_whose_allocator_fails_is_not_kept),
            T(state_shared_by_parallel_branches),
            T(stack_lifetimes_across_errors),
            T(stack_zeroed_and_freed_newest_first),
            T(root_id_same_in_flow_different_in_branches),
            T(is_valid_tracks_step_life),
            T(is_valid_as_the_reference_bool_cast),
            T(is_valid_false_once_its_root_is_cancelled),
            T(new_instance_runs_independently),
            T(root_level_use_before_execute),
    };
    return cmocka_run_group_tests_name("steps", tests, NULL, NULL);
}
