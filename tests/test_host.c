/* Steps run by the host (futoin_tool_set_host_exec()): what happens to a
 * step the host took while it holds it. Between host_next() and host_done()
 * the host is inside that step's callback; nothing else of its flow may run
 * meanwhile (as nothing runs while a C step's callback is on the stack), and
 * a misused host_done() is reported, never run on a step nobody took. Every
 * test counts the engine's allocations: a flow or tool kept by a lost
 * callback would leak them. */
#include "helpers.h"

static long g_live;

static void* count_malloc(size_t n)
{
    ++g_live;
    return malloc(n);
}

static void* count_realloc(void* p, size_t n)
{
    if (!p) {
        ++g_live;
    }
    return realloc(p, n);
}

static void count_free(void* p)
{
    if (p) {
        --g_live;
    }
    free(p);
}

static const FutoInAllocator g_counting = {count_malloc, count_realloc, count_free};

static void h_exec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
}

static void h_loop(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
}

static void h_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    trace("host eh %s", code);
}

static void c_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    trace("c eh %s", code);
}

static void unhandled(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    trace("unhandled %s", code);
}

static void t_immediate(void* data)
{
    trace("%s", (const char*)data);
}

static void c_send_heap_str(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* in)
{
    (void)data;
    (void)in;
    FutoInArgs args = args0();
    args.arg0 = val_heap_str("hello");
    bsi->api->success(bsi, &args);
}

static FutoInAsyncTool* host_tool(void)
{
    FutoInAsyncTool* t = futoin_tool_new();
    assert_non_null(t);
    futoin_tool_use_virtual_time(t);
    futoin_tool_set_host_exec(t, h_exec);
    futoin_tool_set_host_loops(t, h_loop, NULL);
    futoin_tool_set_host_error(t, h_eh);
    return t;
}

/* every step the host is given, done at once */
static int drain(FutoInAsyncTool* t)
{
    int n = 0;
    FutoInAsyncSteps* s;
    while ((s = futoin_tool_host_next(t, NULL, NULL))) {
        futoin_tool_host_done(s);
        ++n;
    }
    return n;
}

static int setup(void** state)
{
    (void)state;
    trace_reset();
    g_live = 0;
    return 0;
}

/* the loop body's slot is the next iteration's at once, queued for the host
 * and not taken: a second host_done() of the first one is a misuse */
static void host_done_twice_on_a_loop_body_is_refused(void** state)
{
    (void)state;
    FutoInAsyncTool* t = host_tool();
    FutoInAsyncSteps* r = futoin_steps_new(t);
    r->api->loop(r, NULL, h_loop, NULL);
    r->api->execute(r, NULL, unhandled);
    futoin_tool_iterate(t, 0);
    FutoInAsyncSteps* s = futoin_tool_host_next(t, NULL, NULL);
    assert_non_null(s);
    futoin_tool_host_done(s);
    stderr_capture();
    futoin_tool_host_done(s);
    assert_non_null(strstr(stderr_captured(), "futoin_tool_host_done(): not a step taken"));
    /* the host queue is intact: the next iteration comes once, the root never */
    FutoInAsyncSteps* n = futoin_tool_host_next(t, NULL, NULL);
    assert_ptr_equal(n, s);
    assert_int_equal(futoin_tool_host_kind(n, NULL), FUTOIN_HOST_LOOP);
    assert_null(futoin_tool_host_next(t, NULL, NULL));
    n->api->breakLoop(n, NULL);
    futoin_tool_host_done(n);
    assert_int_equal(drain(t), 0);
    r->api->cancel(r);
    r->api->free(r);
    FutoInAsyncSteps* r2 = futoin_steps_new(t); /* made from the same memory */
    assert_null(futoin_tool_host_next(t, NULL, NULL));
    /* a done with nothing taken at all is refused too */
    stderr_capture();
    futoin_tool_host_done(r2);
    assert_non_null(strstr(stderr_captured(), "not a step taken"));
    r2->api->free(r2);
    futoin_tool_free(t);
    assert_int_equal(g_live, 0);
}

/* an executed root: a parallel (C error handler) of two host steps */
static FutoInAsyncSteps* two_host_branches(FutoInAsyncTool* t)
{
    FutoInAsyncSteps* r = futoin_steps_new(t);
    FutoInAsyncSteps* p = r->api->parallel(r, NULL, c_eh);
    assert_non_null(futoin_tool_host_add(p, NULL));
    assert_non_null(futoin_tool_host_add(p, NULL));
    r->api->execute(r, NULL, unhandled);
    return r;
}

/* no second step of a flow while the host holds one: taking branch 2's
 * step ran its first burst, whose failure tore branch 1's taken step down
 * under the host; now branch 2 comes after host_done() of branch 1's */
static void sibling_failure_waits_for_the_taken_step(void** state)
{
    (void)state;
    FutoInAsyncTool* t = host_tool();
    FutoInAsyncSteps* r = two_host_branches(t);
    futoin_steps_execute_burst(r);
    FutoInAsyncSteps* s1 = futoin_tool_host_next_of(r, NULL, NULL);
    assert_non_null(s1);
    /* no second step of the same flow while the host holds one */
    assert_null(futoin_tool_host_next_of(r, NULL, NULL));
    assert_null(futoin_tool_host_next(t, NULL, NULL));
    futoin_tool_host_done(s1); /* it waits: no success */
    FutoInAsyncSteps* s2 = futoin_tool_host_next_of(r, NULL, NULL);
    assert_non_null(s2);
    assert_ptr_not_equal(s2, s1);
    s2->api->handle_error(s2, "Fail", "branch 2");
    futoin_tool_host_done(s2);
    assert_string_equal(g_trace, "c eh Fail|unhandled Fail");
    futoin_tool_run(t);
    r->api->free(r);
    futoin_tool_free(t);
    assert_int_equal(g_live, 0);
}

/* the same through the tool's queue: branch 2's failure is an event of the
 * loop; while the host holds branch 1's step it is not run */
static void sibling_failure_in_a_turn_waits_for_the_taken_step(void** state)
{
    (void)state;
    FutoInAsyncTool* t = host_tool();
    FutoInAsyncSteps* r = two_host_branches(t);
    for (int i = 0; i < 3 && !futoin_tool_host_pending(t); ++i) {
        futoin_tool_iterate(t, 0);
    }
    FutoInAsyncSteps* s1 = futoin_tool_host_next(t, NULL, NULL);
    FutoInAsyncSteps* s2 = futoin_tool_host_next(t, NULL, NULL);
    assert_non_null(s1);
    assert_null(s2); /* branch 2's step comes once s1 is done */
    s1->api->waitExternal(s1);
    futoin_tool_host_done(s1);
    s2 = futoin_tool_host_next(t, NULL, NULL);
    assert_non_null(s2);
    FutoInAsyncSteps* s1w = s1; /* branch 1 waits for an event */
    s1 = NULL;
    /* now the other way round: branch 1's step is completed with an error
     * from outside while the host holds branch 2's step */
    s1w->api->handle_error(s1w, "Outside", "from an event");
    assert_int_equal(futoin_tool_run_one(t), 0); /* its unwinding is the flow's: later */
    assert_int_equal(futoin_tool_host_taken(t), 1);
    assert_int_equal(futoin_tool_iterate(t, 0), 0);
    assert_string_equal(g_trace, "");
    assert_int_equal(futoin_tool_host_kind(s2, NULL), FUTOIN_HOST_STEP);
    assert_int_equal(s2->api->isValid(s2), 1);
    s2->api->success(s2, NULL);
    futoin_tool_host_done(s2);
    futoin_tool_run(t);
    assert_string_equal(g_trace, "c eh Outside|unhandled Outside");
    r->api->free(r);
    futoin_tool_free(t);
    assert_int_equal(g_live, 0);
}

/* the host's loop turns while it holds a step whose timeout is due: the
 * timeout waits for host_done(), and a step that completed meanwhile wins */
static void timeout_of_a_taken_step_waits_for_host_done(void** state)
{
    (void)state;
    for (int mode = 0; mode < 3; ++mode) {
        trace_reset();
        FutoInAsyncTool* t = host_tool();
        FutoInAsyncSteps* r = futoin_steps_new(t);
        assert_non_null(futoin_tool_host_add(r, mode == 1 ? h_eh : c_eh));
        r->api->execute(r, NULL, unhandled);
        futoin_steps_execute_burst(r);
        FutoInAsyncSteps* s = futoin_tool_host_next(t, NULL, NULL);
        assert_non_null(s);
        s->api->setTimeout(s, 0);
        if (mode == 2) {
            /* events of other flows and the host's own still run meanwhile */
            r->api->sched_immediate(r, (void*)"imm", t_immediate);
            assert_int_equal(futoin_tool_run_one(t), 1);
            assert_string_equal(g_trace, "imm");
            trace_reset();
            assert_int_equal(futoin_tool_run_one(t), 0);
        } else {
            assert_int_equal(futoin_tool_iterate(t, 0), 0);
            assert_int_equal(futoin_tool_run(t), -1);
        }
        assert_string_equal(g_trace, "");
        assert_int_equal(futoin_tool_host_kind(s, NULL), FUTOIN_HOST_STEP);
        assert_int_equal(s->api->isValid(s), 1);
        if (mode == 2) {
            s->api->success(s, NULL); /* it completed first */
        }
        futoin_tool_host_done(s);
        futoin_tool_run(t);
        int handled = drain(t);
        futoin_tool_run(t);
        if (mode == 2) {
            assert_string_equal(g_trace, "");
            assert_int_equal(handled, 0);
        } else if (mode == 1) {
            assert_string_equal(g_trace, "unhandled Timeout");
            assert_int_equal(handled, 1); /* the host's error handler */
        } else {
            assert_string_equal(g_trace, "c eh Timeout|unhandled Timeout");
        }
        assert_int_equal(futoin_tool_host_pending(t), 0);
        r->api->free(r);
        futoin_tool_free(t);
        assert_int_equal(g_live, 0);
    }
}

/* the tool is freed while the host holds a step: the tool goes with its
 * last root, whichever comes last of host_done() and the root's free() */
static void tool_freed_while_a_step_is_taken_goes_with_its_root(void** state)
{
    (void)state;
    for (int mode = 0; mode < 3; ++mode) {
        g_heap_cleanups = 0;
        FutoInAsyncTool* t = host_tool();
        FutoInAsyncSteps* r = futoin_steps_new(t);
        r->api->add(r, NULL, c_send_heap_str, NULL);
        assert_non_null(futoin_tool_host_add(r, NULL));
        r->api->execute(r, NULL, unhandled);
        futoin_tool_iterate(t, 0);
        const FutoInArgs* args = NULL;
        FutoInAsyncSteps* s = futoin_tool_host_next(t, NULL, &args);
        assert_non_null(s);
        assert_string_equal(args->arg0.cstr, "hello"); /* what it received goes with it */
        if (mode == 2) {
            futoin_tool_host_done(s);
            r->api->free(r);
            futoin_tool_free(t);
        } else {
            futoin_tool_free(t);
            if (mode == 0) {
                futoin_tool_host_done(s);
                r->api->free(r);
            } else {
                r->api->free(r);
                futoin_tool_host_done(s);
            }
        }
        assert_int_equal(g_heap_cleanups, 1);
        assert_int_equal(g_live, 0);
    }
}

int main(void)
{
    futoin_set_allocator(&g_counting);
    const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup(host_done_twice_on_a_loop_body_is_refused, setup),
            cmocka_unit_test_setup(sibling_failure_waits_for_the_taken_step, setup),
            cmocka_unit_test_setup(sibling_failure_in_a_turn_waits_for_the_taken_step, setup),
            cmocka_unit_test_setup(timeout_of_a_taken_step_waits_for_host_done, setup),
            cmocka_unit_test_setup(tool_freed_while_a_step_is_taken_goes_with_its_root, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
