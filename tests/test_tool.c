/* The scheduler (AsyncTool): immediates, timers, handles, the clock, the
 * drivers (run / iterate / host-loop hooks), cross-thread completion and the
 * per-flow burst. Exercised both through the public entry points of
 * futoin/core.h and through the sched_* / is_same_thread vtable slots. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"

/* ---- small helpers ---- */

static void cb_trace(void* data)
{
    trace("%s", (const char*)data);
}

/* traces its data and the tool's clock */
static void cb_trace_now(void* data)
{
    trace("%s@%llu", (const char*)data, (unsigned long long)futoin_tool_now(g_fx.tool));
}

static FutoInHandle imm(const char* name)
{
    return g_fx.root->api->sched_immediate(g_fx.root, (void*)name, cb_trace);
}

static FutoInHandle dfr(uint32_t ms, const char* name)
{
    return g_fx.root->api->sched_deferred(g_fx.root, ms, (void*)name, cb_trace_now);
}

static int valid(FutoInHandle* h)
{
    return g_fx.root->api->sched_is_valid(g_fx.root, h);
}

static void cancel(FutoInHandle* h)
{
    g_fx.root->api->sched_cancel(g_fx.root, h);
}

static uint64_t real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- immediates and timers ---- */

static void cb_queue_more(void* data)
{
    trace("%s", (const char*)data);
    imm("late");
}

static void immediates_run_fifo(void** state)
{
    (void)state;
    imm("i1");
    g_fx.root->api->sched_immediate(g_fx.root, "i2", cb_queue_more);
    imm("i3");
    imm("i4");
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    /* an immediate queued by a callback runs after the ones already queued */
    assert_trace("i1|i2|i3|i4|late");
}

/* iterate_ready(): the ready immediates only; a due timer waits for
 * iterate() (a host whose timers have a phase of their own) */
static void iterate_ready_leaves_due_timers(void** state)
{
    (void)state;
    dfr(5, "t");
    imm("i1");
    futoin_tool_advance(g_fx.tool, 10); /* the timer is due */
    assert_true(futoin_tool_has_ready(g_fx.tool));
    futoin_tool_iterate_ready(g_fx.tool, 0);
    assert_trace("i1");
    assert_false(futoin_tool_has_ready(g_fx.tool));
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 0);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_trace("i1|t@10");
    assert_false(futoin_tool_has_ready(NULL));
}

/* iterate_timers(): the due timers only, as a host's timers phase (Node's):
 * the ready immediates wait for their own phase */
static void iterate_timers_leaves_ready_immediates(void** state)
{
    (void)state;
    dfr(5, "t");
    dfr(20, "later");
    imm("i1");
    futoin_tool_advance(g_fx.tool, 10); /* the first timer is due */
    assert_int_equal(futoin_tool_iterate_timers(g_fx.tool), 0);
    assert_trace("t@10");
    assert_true(futoin_tool_has_ready(g_fx.tool));
    assert_int_equal(futoin_tool_iterate_ready(g_fx.tool, 0), 10);
    assert_trace("t@10|i1");
    assert_int_equal(futoin_tool_iterate_timers(NULL), -1);
}

static void timers_fire_in_deadline_order(void** state)
{
    (void)state;
    dfr(30, "t30");
    dfr(10, "t10");
    dfr(50, "t50");
    dfr(0, "t0");
    dfr(20, "t20");
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("t0@0|t10@10|t20@20|t30@30|t50@50");
}

static void timers_equal_deadlines_fire_in_setting_order(void** state)
{
    (void)state;
    dfr(10, "a");
    dfr(5, "x");
    dfr(10, "b");
    dfr(20, "y");
    dfr(10, "c");
    dfr(10, "d");
    futoin_tool_advance(g_fx.tool, 3);
    dfr(7, "e"); /* set later with the same deadline (3 + 7 == 10) */
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("x@5|a@10|b@10|c@10|d@10|e@10|y@20");
}

/* iterate_until(): timers due by its time only (a host's loop time, taken
 * when its iteration began), immediates as iterate() */
static void iterate_until_fires_timers_due_by_its_time(void** state)
{
    (void)state;
    FutoInAsyncTool* t = g_fx.tool;
    dfr(10, "t10");
    dfr(20, "t20");
    imm("i");
    futoin_tool_advance(t, 20); /* both due by the clock */
    const uint64_t now = futoin_tool_now(t);
    assert_int_equal(futoin_tool_iterate_until(t, 0, now - 10), 0);
    assert_trace("t10@20|i");
    assert_int_equal(futoin_tool_iterate_until(t, 0, now), -1);
    assert_trace("t10@20|i|t20@20");
    assert_int_equal(futoin_tool_iterate_until(NULL, 0, now), -1);
}

static void cb_chain_timer(void* data)
{
    (void)data;
    trace("first@%llu", (unsigned long long)futoin_tool_now(g_fx.tool));
    g_fx.root->api->sched_deferred(g_fx.root, 250, "second", cb_trace_now);
}

static void virtual_time_jumps_to_deadline_without_sleeping(void** state)
{
    (void)state;
    assert_int_equal(futoin_tool_now(g_fx.tool), 0);
    g_fx.root->api->sched_deferred(g_fx.root, 5000, NULL, cb_chain_timer);
    uint64_t t0 = real_ms();
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    uint64_t elapsed = real_ms() - t0;
    assert_trace("first@5000|second@5250");
    assert_int_equal(futoin_tool_now(g_fx.tool), 5250);
    /* 5.25 s of virtual time must not cost real time */
    assert_true(elapsed < 1000);
}

/* ---- handles ---- */

static void cancel_immediate_before_it_runs(void** state)
{
    (void)state;
    FutoInHandle h1 = imm("i1");
    FutoInHandle h2 = imm("i2");
    FutoInHandle h3 = imm("i3");
    FutoInHandle copy = h2;
    assert_int_equal(valid(&h1), 1);
    assert_int_equal(valid(&h2), 1);
    assert_int_equal(valid(&h3), 1);
    cancel(&h2);
    assert_int_equal(valid(&h2), 0);
    assert_int_equal(valid(&copy), 0); /* a copy of a cancelled handle too */
    assert_int_equal(valid(&h1), 1);
    assert_int_equal(valid(&h3), 1);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("i1|i3");
    assert_int_equal(valid(&h1), 0);
    assert_int_equal(valid(&h3), 0);
}

static void cancel_deferred_before_it_runs(void** state)
{
    (void)state;
    FutoInHandle a = dfr(10, "a");
    FutoInHandle b = dfr(20, "b");
    FutoInHandle c = dfr(30, "c");
    FutoInHandle late = dfr(1000, "late");
    assert_int_equal(valid(&b), 1);
    cancel(&b);
    cancel(&late);
    assert_int_equal(valid(&b), 0);
    assert_int_equal(valid(&late), 0);
    assert_int_equal(valid(&a), 1);
    assert_int_equal(valid(&c), 1);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("a@10|c@30");
    /* the cancelled 1000 ms timer did not move virtual time */
    assert_int_equal(futoin_tool_now(g_fx.tool), 30);
}

static void handle_valid_while_scheduled_then_invalid(void** state)
{
    (void)state;
    FutoInHandle hi = imm("i");
    FutoInHandle hd = dfr(10, "d");
    assert_int_equal(valid(&hi), 1);
    assert_int_equal(valid(&hd), 1);
    /* one iterate in virtual time: runs the immediate only */
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 10);
    assert_trace("i");
    assert_int_equal(valid(&hi), 0);
    assert_int_equal(valid(&hd), 1);
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_trace("i|d@10");
    assert_int_equal(valid(&hd), 0);
}

static void cancel_after_run_is_harmless(void** state)
{
    (void)state;
    FutoInHandle hi = imm("i1");
    FutoInHandle hd = dfr(5, "d1");
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("i1|d1@5");
    cancel(&hi);
    cancel(&hd);
    assert_int_equal(valid(&hi), 0);
    assert_int_equal(valid(&hd), 0);

    /* new ones reuse the pooled slots: the stale handles must not touch them */
    FutoInHandle hi2 = imm("i2");
    FutoInHandle hd2 = dfr(5, "d2");
    cancel(&hi);
    cancel(&hd);
    assert_int_equal(valid(&hi), 0);
    assert_int_equal(valid(&hd), 0);
    assert_int_equal(valid(&hi2), 1);
    assert_int_equal(valid(&hd2), 1);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("i1|d1@5|i2|d2@10");
    /* and cancelling twice after a cancel is fine too */
    FutoInHandle h3 = imm("never");
    cancel(&h3);
    cancel(&h3);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("i1|d1@5|i2|d2@10");
}

static void zeroed_handle_is_invalid(void** state)
{
    (void)state;
    FutoInHandle z;
    memset(&z, 0, sizeof(z));
    imm("i"); /* something scheduled, so the tool is not empty */
    assert_int_equal(valid(&z), 0);
    cancel(&z); /* harmless */
    assert_int_equal(valid(NULL), 0);
    cancel(NULL);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("i");
}

static void handle_of_another_tool_is_invalid(void** state)
{
    (void)state;
    FutoInAsyncTool* t2 = futoin_tool_new();
    assert_non_null(t2);
    futoin_tool_use_virtual_time(t2);
    FutoInAsyncSteps* r2 = futoin_steps_new(t2);
    assert_non_null(r2);

    FutoInHandle hi = r2->api->sched_immediate(r2, "other-i", cb_trace);
    FutoInHandle hd = r2->api->sched_deferred(r2, 10, "other-d", cb_trace);
    assert_int_equal(r2->api->sched_is_valid(r2, &hi), 1);
    assert_int_equal(r2->api->sched_is_valid(r2, &hd), 1);
    /* not valid for the first tool, and cancelling there does nothing */
    assert_int_equal(valid(&hi), 0);
    assert_int_equal(valid(&hd), 0);
    cancel(&hi);
    cancel(&hd);
    assert_int_equal(r2->api->sched_is_valid(r2, &hi), 1);
    assert_int_equal(r2->api->sched_is_valid(r2, &hd), 1);

    /* and the reverse */
    FutoInHandle mine = imm("mine");
    assert_int_equal(r2->api->sched_is_valid(r2, &mine), 0);
    r2->api->sched_cancel(r2, &mine);
    assert_int_equal(valid(&mine), 1);

    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("mine");
    assert_int_equal(futoin_tool_run(t2), 0);
    assert_trace("mine|other-i|other-d");
    r2->api->free(r2);
    futoin_tool_free(t2);
}

static void null_callback_gives_invalid_handle(void** state)
{
    (void)state;
    FutoInHandle hi = g_fx.root->api->sched_immediate(g_fx.root, "x", NULL);
    FutoInHandle hd = g_fx.root->api->sched_deferred(g_fx.root, 10, "x", NULL);
    assert_null(hi.data1);
    assert_null(hd.data1);
    assert_int_equal(valid(&hi), 0);
    assert_int_equal(valid(&hd), 0);
    cancel(&hi);
    cancel(&hd);
    /* nothing was scheduled */
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_int_equal(futoin_tool_now(g_fx.tool), 0);
    assert_trace("");
}

/* ---- drivers ---- */

static void run_returns_zero_when_nothing_is_left(void** state)
{
    (void)state;
    assert_int_equal(futoin_tool_run(g_fx.tool), 0); /* empty tool */
    imm("i");
    dfr(100, "d");
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("i|d@100");
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0); /* and again */
}

static void cb_nested_run(void* data)
{
    trace("%s:%d", (const char*)data, futoin_tool_run(g_fx.tool));
}

static void f_nested_run(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    trace("%s:%d", (const char*)data, futoin_tool_run(g_fx.tool));
}

static void run_reentrant_returns_minus_one(void** state)
{
    (void)state;
    g_fx.root->api->sched_immediate(g_fx.root, "imm", cb_nested_run);
    g_fx.root->api->sched_deferred(g_fx.root, 10, "timer", cb_nested_run);
    g_fx.root->api->add(g_fx.root, "step", f_nested_run, NULL);
    run_root();
    assert_trace("imm:-1|step:-1|timer:-1");
}

static void iterate_max_tasks_bounds_work(void** state)
{
    (void)state;
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 1), -1); /* nothing pending */
    imm("i1");
    imm("i2");
    imm("i3");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 1), 0);
    assert_trace("i1");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 1), 0);
    assert_trace("i1|i2");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 1), -1);
    assert_trace("i1|i2|i3");

    /* max 2 */
    imm("j1");
    imm("j2");
    imm("j3");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 2), 0);
    assert_trace("i1|i2|i3|j1|j2");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 2), -1);
    assert_trace("i1|i2|i3|j1|j2|j3");

    /* 0: only the ones ready at the call */
    trace_reset();
    g_fx.root->api->sched_immediate(g_fx.root, "k1", cb_queue_more);
    imm("k2");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 0);
    assert_trace("k1|k2");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_trace("k1|k2|late");
}

/* a timer callback that makes work ready: run_one stops after the timer */
static void cb_post_imm(void* data)
{
    trace("%s", (const char*)data);
    imm("posted");
}

static void run_one_runs_exactly_one_event(void** state)
{
    (void)state;
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 0); /* nothing pending */
    g_fx.root->api->sched_deferred(g_fx.root, 50, "t50", cb_post_imm);
    dfr(50, "t50b");
    imm("i1");
    imm("i2");
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_trace("i1");
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_trace("i1|i2");
    /* only timers left: virtual time moves to the first one, which alone runs */
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_trace("i1|i2|t50");
    assert_int_equal(futoin_tool_now(g_fx.tool), 50);
    /* a timer already due comes before the immediate the first one posted,
     * as in iterate() */
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_trace("i1|i2|t50|t50b@50");
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_trace("i1|i2|t50|t50b@50|posted");
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 0);
}

/* in virtual time a 0 ms timer is due at once, yet comes after the events
 * queued before it and before those queued after it, as in the JS
 * reference's AsyncToolTest, whose one queue keeps equal times in order */
static void run_one_orders_a_zero_timer_among_the_immediates(void** state)
{
    (void)state;
    imm("a");
    dfr(0, "z0");
    imm("b");
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_trace("a|z0@0|b");
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 0);
}

static void iterate_returns_delay_to_next_timer(void** state)
{
    (void)state;
    imm("i");
    dfr(40, "d40");
    dfr(70, "d70");
    /* virtual time does not jump while immediates are ready */
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 40);
    assert_trace("i");
    assert_int_equal(futoin_tool_now(g_fx.tool), 0);
    /* nothing else to do: the clock jumps to the next deadline */
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 30);
    assert_trace("i|d40@40");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_trace("i|d40@40|d70@70");
}

/* an endless loop on a virtual clock, stopped by a timer (the C++
 * reference's "cancel the loop after 1000 ms" cases): the clock stood while
 * the loop kept the tool busy, so the timer never fired and run() hung */
static void count_iteration(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    ++*(size_t*)data;
}

static void cancel_root(void* data)
{
    FutoInAsyncSteps* root = data;
    trace("cancel@%llu", (unsigned long long)futoin_tool_now(g_fx.tool));
    root->api->cancel(root);
}

static void a_busy_virtual_clock_still_reaches_its_timers(void** state)
{
    (void)state;
    size_t n = 0;
    g_fx.root->api->loop(g_fx.root, &n, count_iteration, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, NULL);
    g_fx.root->api->sched_deferred(g_fx.root, 1000, g_fx.root, cancel_root);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    assert_trace("cancel@1000");
    assert_true(n > 10000); /* the loop had its turns first */
    /* a short busy spell moves no time: the clock still jumps only when idle */
    dfr(50, "d50");
    imm("i");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 50);
    assert_int_equal(futoin_tool_now(g_fx.tool), 1000);
}

static void next_delay_reports_without_running(void** state)
{
    (void)state;
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    dfr(25, "d");
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 25);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 25); /* nothing ran */
    futoin_tool_advance(g_fx.tool, 10);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 15);
    FutoInHandle h = imm("i");
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 0);
    cancel(&h);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 15);
    futoin_tool_advance(g_fx.tool, 100);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 0); /* overdue */
    assert_trace("");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_trace("d@110");
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
}

static void advance_moves_virtual_time(void** state)
{
    (void)state;
    assert_int_equal(futoin_tool_now(g_fx.tool), 0);
    futoin_tool_advance(g_fx.tool, 100);
    assert_int_equal(futoin_tool_now(g_fx.tool), 100);
    dfr(50, "d"); /* deadline 150 */
    futoin_tool_advance(g_fx.tool, 49);
    assert_int_equal(futoin_tool_now(g_fx.tool), 149);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 1);
    assert_trace("");
    futoin_tool_advance(g_fx.tool, 1);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 0);
    /* an immediate keeps the clock from jumping: the due timer still fires */
    imm("i");
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_trace("d@150|i");
    assert_int_equal(futoin_tool_now(g_fx.tool), 150);
}

typedef struct test_clock
{
    uint64_t now;
    int calls;
} test_clock;

static uint64_t test_clock_now(void* data)
{
    test_clock* c = data;
    ++c->calls;
    return c->now;
}

static void custom_clock_drives_timers(void** state)
{
    (void)state;
    test_clock clk = {1000, 0};
    futoin_tool_set_clock(g_fx.tool, test_clock_now, &clk);
    assert_int_equal(futoin_tool_now(g_fx.tool), 1000);
    assert_true(clk.calls > 0);

    dfr(100, "d"); /* deadline 1100 */
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 100);
    assert_trace("");
    clk.now = 1060;
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 40);
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 40);
    clk.now = 1099;
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 1);
    assert_trace("");
    clk.now = 1100;
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_trace("d@1100");
    /* advance() is for virtual time only: the custom clock is not touched */
    futoin_tool_advance(g_fx.tool, 500);
    assert_int_equal(futoin_tool_now(g_fx.tool), 1100);
}

typedef struct hook_rec
{
    int arms;
    int64_t last;
    int64_t seq[32];
    atomic_int wakeups;
} hook_rec;

static void hook_arm(void* data, int64_t delay_ms)
{
    hook_rec* r = data;
    if (r->arms < 32) {
        r->seq[r->arms] = delay_ms;
    }
    ++r->arms;
    r->last = delay_ms;
}

static void hook_wakeup(void* data)
{
    hook_rec* r = data;
    atomic_fetch_add(&r->wakeups, 1);
}

/* the tool's hooks record into `rec` (the tool copies the hooks) */
static void hooks_install(hook_rec* rec)
{
    memset(rec, 0, sizeof(*rec));
    FutoInLoopHooks hooks = {rec, hook_arm, hook_wakeup};
    futoin_tool_set_hooks(g_fx.tool, &hooks);
}

static void hooks_arm_reports_next_wakeup(void** state)
{
    (void)state;
    hook_rec rec;
    hooks_install(&rec);
    assert_int_equal(rec.last, -1); /* nothing pending */

    int before = rec.arms;
    dfr(30, "d");
    assert_true(rec.arms > before);
    assert_int_equal(rec.last, 30); /* only a timer: its delay */

    before = rec.arms;
    imm("i");
    assert_true(rec.arms > before);
    assert_int_equal(rec.last, 0); /* ready work */

    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 30);
    assert_trace("i");
    assert_int_equal(rec.last, 30);

    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_trace("i|d@30");
    assert_int_equal(rec.last, -1);

    /* an immediate on an idle tool arms 0 again */
    before = rec.arms;
    imm("j");
    assert_true(rec.arms > before);
    assert_int_equal(rec.last, 0);
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_int_equal(rec.last, -1);
    assert_int_equal(atomic_load(&rec.wakeups), 0); /* no cross-thread post */
    futoin_tool_set_hooks(g_fx.tool, NULL);
}

static void f_host_marker(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
    fail_msg("the engine called a host step itself");
}

/* the next host step of the tool, whose data is the string `want` */
static FutoInAsyncSteps* host_next_expect(const char* want)
{
    void* data = NULL;
    FutoInAsyncSteps* s = futoin_tool_host_next(g_fx.tool, &data, NULL);
    assert_non_null(s);
    assert_string_equal(data, want);
    return s;
}

/* a pending timer must not cost a clock read and a re-arm of the host's
 * timer on every host step: the earliest deadline did not change */
static void waits_with_timeout(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->setTimeout(bsi, 3000);
}

/* cancel() from outside the tool's callbacks stops the step's timer: the
 * host's timer is disarmed too (Node waited out the cancelled deadline) */
static void hooks_rearmed_when_a_cancel_from_outside_stops_a_timer(void** state)
{
    (void)state;
    hook_rec rec;
    hooks_install(&rec);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, waits_with_timeout, NULL);
    r->api->execute(r, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(rec.last, 3000);
    r->api->cancel(r);
    assert_int_equal(rec.last, -1);
}

static void hooks_not_rearmed_per_step_while_the_deadline_holds(void** state)
{
    (void)state;
    test_clock clk = {5000, 0};
    futoin_tool_set_clock(g_fx.tool, test_clock_now, &clk);
    hook_rec rec;
    hooks_install(&rec);
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    dfr(1000, "d");
    FutoInAsyncSteps* r = g_fx.root;
    for (int i = 0; i < 50; ++i) {
        r->api->add(r, NULL, f_host_marker, NULL);
    }
    r->api->execute(r, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    assert_int_equal(rec.last, 1000);
    int arms = rec.arms, reads = clk.calls, steps = 0;
    FutoInAsyncSteps* bsi;
    while ((bsi = futoin_tool_host_next(g_fx.tool, NULL, NULL))) {
        futoin_tool_host_done(bsi);
        ++steps;
    }
    assert_int_equal(steps, 50);
    assert_int_equal(rec.arms, arms);
    assert_int_equal(clk.calls, reads);
    /* an earlier timer still re-arms at once, and time moving on is seen */
    dfr(10, "e");
    assert_int_equal(rec.last, 10);
    clk.now += 10;
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), 990);
    assert_trace("e@5010");
    assert_int_equal(rec.last, 990);
    futoin_tool_set_hooks(g_fx.tool, NULL);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* a host that runs several steps as one: they use up the burst
 * (host_spend), and the rest of its batch goes right after it (host_follow) */
static void host_run_spends_burst_and_follows(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    futoin_tool_set_host_bursts(g_fx.tool, 1);
    futoin_tool_set_burst(g_fx.tool, 4);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, (void*)"run", f_host_marker, NULL);
    r->api->add(r, (void*)"next", f_host_marker, NULL);
    r->api->execute(r, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    FutoInAsyncSteps* s = host_next_expect("run");
    assert_int_equal(futoin_tool_host_budget(s), 3);
    futoin_tool_host_spend(s, 2);
    assert_int_equal(futoin_tool_host_budget(s), 1);
    char* rest = futoin_tool_host_follow(s);
    assert_non_null(rest);
    strcpy(rest, "rest");
    futoin_tool_host_done(s);
    /* the rest of the batch comes first, with the last step of the burst */
    void* data = NULL;
    s = futoin_tool_host_next(g_fx.tool, &data, NULL);
    assert_non_null(s);
    assert_ptr_equal(data, rest);
    assert_string_equal(data, "rest");
    assert_int_equal(futoin_tool_host_budget(s), 0);
    futoin_tool_host_spend(s, 5); /* more than is left: none is left */
    assert_int_equal(futoin_tool_host_budget(s), 0);
    futoin_tool_host_done(s);
    /* the burst is used up: the next step waits for a turn of the loop */
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL));
    futoin_tool_iterate(g_fx.tool, 0);
    s = host_next_expect("next");
    assert_int_equal(futoin_tool_host_budget(s), 3);
    futoin_tool_host_done(s);
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL));
    /* only a plain step taken by the host */
    assert_null(futoin_tool_host_follow(r));
    assert_null(futoin_tool_host_follow(NULL));
    assert_int_equal(futoin_tool_host_budget(r), 0);
    futoin_tool_host_spend(NULL, 1);
    futoin_tool_set_burst(g_fx.tool, 100);
    futoin_tool_set_host_bursts(g_fx.tool, 0);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

static char g_cleaned[64];

static void host_cleanup_rec(void* data)
{
    strcat(g_cleaned, data);
    strcat(g_cleaned, ",");
}

static char* host_add_str(FutoInAsyncSteps* bsi, const char* str)
{
    char* data = futoin_tool_host_add(bsi, NULL);
    assert_non_null(data);
    assert_int_equal(data[0], 0); /* zeroed */
    strcpy(data, str);
    return data;
}

/* is_top(): the innermost step of its sequence, not one whose sub-steps run */
static void is_top_tells_the_innermost_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    host_add_str(r, "a");
    assert_int_equal(futoin_steps_is_top(r), 0); /* a root */
    assert_int_equal(futoin_steps_is_root(r), 1);
    r->api->execute(r, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    FutoInAsyncSteps* a = host_next_expect("a");
    assert_int_equal(futoin_steps_is_top(a), 1);
    assert_int_equal(futoin_steps_is_root(a), 0); /* a step */
    assert_int_equal(futoin_steps_is_root(r), 1); /* running */
    host_add_str(a, "a1");
    futoin_tool_host_done(a);
    FutoInAsyncSteps* a1 = host_next_expect("a1");
    assert_int_equal(futoin_steps_is_top(a), 0); /* its sub-step runs */
    assert_int_equal(futoin_steps_is_top(a1), 1);
    a1->api->waitExternal(a1);
    futoin_tool_host_done(a1);
    assert_int_equal(futoin_steps_is_top(a1), 1); /* waits */
    assert_int_equal(futoin_steps_is_top(a), 0);
    r->api->cancel(r);
    assert_int_equal(futoin_steps_is_top(NULL), 0);
    assert_int_equal(futoin_steps_is_root(NULL), -1);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* host_add(): the data is the step's own and the host's cleanup gets it
 * when the step is released: after it ran, after its sub-steps, unrun */
static void host_add_data_lives_with_the_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = g_fx.root;
    assert_null(futoin_tool_host_add(r, NULL)); /* no host exec callback */
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    futoin_tool_set_host_cleanup(g_fx.tool, host_cleanup_rec);
    g_cleaned[0] = 0;
    char* a = host_add_str(r, "a");
    host_add_str(r, "b");
    host_add_str(r, "c");
    r->api->execute(r, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    void* data = NULL;
    FutoInAsyncSteps* s = futoin_tool_host_next(g_fx.tool, &data, NULL);
    assert_ptr_equal(data, a);
    futoin_tool_host_done(s);
    assert_string_equal(g_cleaned, "a,");
    s = host_next_expect("b");
    host_add_str(s, "b1");
    futoin_tool_host_done(s);
    s = host_next_expect("b1");
    assert_string_equal(g_cleaned, "a,");
    futoin_tool_host_done(s);
    assert_string_equal(g_cleaned, "a,b1,b,");
    s = host_next_expect("c");
    s->api->add(s, (void*)"c1", f_host_marker, NULL);
    host_add_str(s, "c2");
    futoin_tool_host_done(s);
    s = host_next_expect("c1");
    r->api->cancel(r); /* inside c1: c2 never runs */
    futoin_tool_host_done(s);
    assert_string_equal(g_cleaned, "a,b1,b,c2,c,");
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL));
    /* bad input */
    assert_null(futoin_tool_host_add(NULL, NULL));
    futoin_tool_set_host_cleanup(g_fx.tool, NULL);
    futoin_tool_set_host_cleanup(NULL, host_cleanup_rec);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* a flow executed inside a host step runs its first burst at once with
 * execute_nested(), and host_next_of() hands over its steps only, before
 * steps of other flows waiting in the host queue */
static void host_nested_flow_runs_alone(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    FutoInAsyncSteps* a = g_fx.root;
    FutoInAsyncSteps* x = futoin_steps_new(g_fx.tool);
    FutoInAsyncSteps* b = futoin_steps_new(g_fx.tool);
    assert_non_null(x);
    assert_non_null(b);
    a->api->add(a, (void*)"a", f_host_marker, NULL);
    x->api->add(x, (void*)"x", f_host_marker, NULL);
    a->api->execute(a, NULL, NULL);
    x->api->execute(x, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    void* data = NULL;
    FutoInAsyncSteps* sa = host_next_expect("a");
    /* inside a's step: x waits in the host queue; b is executed */
    b->api->add(b, (void*)"b1", f_host_marker, NULL);
    b->api->add(b, (void*)"b2", f_host_marker, NULL);
    b->api->execute(b, NULL, NULL);
    assert_null(futoin_tool_host_next_of(b, NULL, NULL));
    assert_int_equal(futoin_steps_execute_burst(b), 0); /* not inside a host step */
    assert_int_equal(futoin_steps_execute_nested(b), 1);
    FutoInAsyncSteps* sb = futoin_tool_host_next_of(b, &data, NULL);
    assert_non_null(sb);
    assert_string_equal(data, "b1");
    assert_null(futoin_tool_host_next_of(b, NULL, NULL));
    futoin_tool_host_done(sb);
    sb = futoin_tool_host_next_of(b, &data, NULL);
    assert_non_null(sb);
    assert_string_equal(data, "b2");
    futoin_tool_host_done(sb);
    assert_null(futoin_tool_host_next_of(b, NULL, NULL));
    assert_null(futoin_tool_host_next_of(a, NULL, NULL));
    futoin_tool_host_done(sa);
    /* x's step is still first in the queue, then nothing */
    FutoInAsyncSteps* sx = host_next_expect("x");
    futoin_tool_host_done(sx);
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL));
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0);
    /* bad input */
    assert_null(futoin_tool_host_next_of(NULL, NULL, NULL));
    assert_int_equal(futoin_steps_execute_nested(NULL), 0);
    x->api->free(x);
    b->api->free(b);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* in_event(): inside an event of the tool (nothing runs nested), not after a
 * run_one() that only took in a post from another thread */
static void note_in_event(void* data)
{
    *(int*)data = futoin_tool_in_event(g_fx.tool);
}

static void nothing_posted(void* data)
{
    (void)data;
}

static void in_event_tells_an_event_on_the_stack(void** state)
{
    (void)state;
    int inside = -1;
    assert_int_equal(futoin_tool_in_event(g_fx.tool), 0);
    g_fx.root->api->sched_immediate(g_fx.root, &inside, note_in_event);
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_int_equal(inside, 1);
    assert_int_equal(futoin_tool_in_event(g_fx.tool), 0);
    assert_int_equal(futoin_tool_post(g_fx.tool, nothing_posted, NULL), 0);
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 0); /* took the post in, ran no event */
    assert_int_equal(futoin_tool_in_event(g_fx.tool), 0);
    assert_int_equal(futoin_tool_in_event(NULL), 0);
}

/* event_open(): the rest of an event runs as outside any: a flow it
 * executes takes its first burst at once, run_one() runs the next event
 * nested; event_close() puts the event back */
static void f_trace_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    trace("%s", (const char*)data);
}

static void cb_open_event(void* data)
{
    FutoInAsyncSteps* r = data;
    r->api->add(r, "step", f_trace_step, NULL);
    r->api->execute(r, NULL, on_unhandled);
    assert_int_equal(futoin_steps_execute_burst(r), 0); /* in an event: refused */
    const int tok = futoin_tool_event_open(g_fx.tool);
    assert_int_equal(futoin_tool_in_event(g_fx.tool), 0);
    assert_int_equal(futoin_steps_execute_burst(r), 1);
    trace("burst");
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    trace("nested");
    futoin_tool_event_close(g_fx.tool, tok);
    assert_int_equal(futoin_tool_in_event(g_fx.tool), 1);
}

static void event_open_lets_an_event_run_flows_nested(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = futoin_steps_new(g_fx.tool);
    g_fx.root->api->sched_immediate(g_fx.root, r, cb_open_event);
    g_fx.root->api->sched_immediate(g_fx.root, "ev2", cb_trace);
    assert_int_equal(futoin_tool_run_one(g_fx.tool), 1);
    assert_trace("step|burst|ev2|nested");
    assert_int_equal(futoin_tool_in_event(g_fx.tool), 0);
    assert_int_equal(futoin_tool_event_open(NULL), -1);
    futoin_tool_event_close(NULL, 1); /* harmless */
    r->api->free(r);
}

/* the args hook sees (and may change) the values a C step is about to get,
 * and is not called for a step that gets none */
static const FutoInType k_hook_i64 = {FTN_TYPE_INT64, NULL};

static void hook_doubles(void* ctx, FutoInArgs* args)
{
    ++*(int*)ctx;
    if (args->arg0.type == &k_hook_i64) {
        args->arg0.i64 *= 2;
    }
}

static void gives_21(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs out = {0};
    out.arg0.type = &k_hook_i64;
    out.arg0.i64 = 21;
    bsi->api->success(bsi, &out);
}

static void traces_i64(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    trace("got %lld", (long long)args->arg0.i64);
}

static void args_hook_sees_values_of_c_steps(void** state)
{
    (void)state;
    int calls = 0;
    futoin_tool_set_args_hook(g_fx.tool, hook_doubles, &calls);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, gives_21, NULL);
    r->api->add(r, NULL, traces_i64, NULL);
    r->api->execute(r, NULL, NULL);
    futoin_tool_run(g_fx.tool);
    assert_trace("got 42");
    assert_int_equal(calls, 1); /* the first step got no values */
    futoin_tool_set_args_hook(g_fx.tool, NULL, NULL);
    trace_reset();
    r->api->add(r, NULL, gives_21, NULL);
    r->api->add(r, NULL, traces_i64, NULL);
    r->api->execute(r, NULL, NULL);
    futoin_tool_run(g_fx.tool);
    assert_trace("got 21");
    assert_int_equal(calls, 1);
    futoin_tool_set_args_hook(NULL, NULL, NULL); /* harmless */
}

/* host_next_of() takes a flow's strands in queue order out of the middle of
 * the host queue, a cancel takes a flow's strands out of it, and the queue
 * keeps its order for host_next() (per-flow links: before, each call
 * searched the whole queue, a cost growing with other flows' waiting steps) */
static FutoInAsyncSteps* next_of_expect(FutoInAsyncSteps* root, const char* want)
{
    void* data = NULL;
    FutoInAsyncSteps* s = futoin_tool_host_next_of(root, &data, NULL);
    assert_non_null(s);
    assert_string_equal(data, want);
    return s;
}

static void host_next_of_takes_from_the_middle(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    FutoInAsyncSteps* roots[3] = {g_fx.root, futoin_steps_new(g_fx.tool), futoin_steps_new(g_fx.tool)};
    static const char* names[3][2] = {{"p1", "p2"}, {"q1", "q2"}, {"c1", "c2"}};
    for (int i = 0; i < 3; ++i) {
        assert_non_null(roots[i]);
        FutoInAsyncSteps* par = roots[i]->api->parallel(roots[i], NULL, NULL);
        for (int j = 0; j < 2; ++j) {
            par->api->add(par, (void*)names[i][j], f_host_marker, NULL);
        }
        roots[i]->api->execute(roots[i], NULL, NULL);
    }
    futoin_tool_iterate(g_fx.tool, 0);
    futoin_tool_host_done(next_of_expect(roots[1], "q1"));
    futoin_tool_host_done(next_of_expect(roots[0], "p1"));
    roots[2]->api->cancel(roots[2]); /* c1 and c2 leave the queue, wherever they are */
    assert_int_equal(futoin_tool_host_peek_of(roots[2]), -1);
    assert_null(futoin_tool_host_next_of(roots[2], NULL, NULL));
    futoin_tool_host_done(host_next_expect("q2")); /* the branches were queued p1 q1 c1 p2 q2 c2 */
    assert_null(futoin_tool_host_next_of(roots[1], NULL, NULL));
    futoin_tool_host_done(next_of_expect(roots[0], "p2"));
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL));
    assert_int_equal(futoin_tool_host_peek_of(roots[0]), -1);
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0);
    roots[1]->api->free(roots[1]);
    roots[2]->api->free(roots[2]);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* a nested run of a flow takes the first burst of each parallel branch its
 * steps start, in order, as the reference runs them inside the parallel
 * step; the step after the parallel waits for a later turn */
static void host_nested_flow_runs_new_branches(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    FutoInAsyncSteps* a = g_fx.root;
    FutoInAsyncSteps* x = futoin_steps_new(g_fx.tool);
    assert_non_null(x);
    x->api->add(x, (void*)"x", f_host_marker, NULL);
    x->api->execute(x, NULL, NULL); /* another flow, ready first */
    FutoInAsyncSteps* p = a->api->parallel(a, NULL, NULL);
    p->api->add(p, (void*)"p0", f_host_marker, NULL);
    p->api->add(p, (void*)"p1", f_host_marker, NULL);
    a->api->add(a, (void*)"end", f_host_marker, NULL);
    a->api->execute(a, NULL, NULL);
    assert_int_equal(futoin_steps_execute_nested(a), 1);
    void* data = NULL;
    FutoInAsyncSteps* s = futoin_tool_host_next_of(a, &data, NULL);
    assert_non_null(s);
    assert_string_equal(data, "p0");
    host_add_str(s, "p0.sub");
    futoin_tool_host_done(s);
    s = futoin_tool_host_next_of(a, &data, NULL);
    assert_string_equal(data, "p0.sub"); /* p0's burst goes on */
    futoin_tool_host_done(s);
    s = futoin_tool_host_next_of(a, &data, NULL);
    assert_string_equal(data, "p1");
    futoin_tool_host_done(s);
    assert_null(futoin_tool_host_next_of(a, NULL, NULL)); /* "end": on a later turn */
    futoin_tool_iterate(g_fx.tool, 0);
    futoin_tool_host_done(host_next_expect("x"));
    futoin_tool_host_done(host_next_expect("end"));
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0);
    x->api->free(x);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* with host bursts, a host step that starts parallel branches: their first
 * bursts come before other flows' steps waiting for the host, one branch at
 * a time */
static void host_new_branches_go_first(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    futoin_tool_set_host_bursts(g_fx.tool, 1);
    FutoInAsyncSteps* a = g_fx.root;
    FutoInAsyncSteps* x = futoin_steps_new(g_fx.tool);
    assert_non_null(x);
    a->api->add(a, (void*)"a", f_host_marker, NULL);
    a->api->add(a, (void*)"a2", f_host_marker, NULL);
    x->api->add(x, (void*)"x", f_host_marker, NULL);
    a->api->execute(a, NULL, NULL);
    x->api->execute(x, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    FutoInAsyncSteps* s = host_next_expect("a");
    FutoInAsyncSteps* p = s->api->parallel(s, NULL, NULL);
    p->api->add(p, (void*)"p0", f_host_marker, NULL);
    p->api->add(p, (void*)"p1", f_host_marker, NULL);
    futoin_tool_host_done(s);
    s = host_next_expect("p0");
    host_add_str(s, "p0.sub");
    futoin_tool_host_done(s);
    futoin_tool_host_done(host_next_expect("p0.sub"));
    futoin_tool_host_done(host_next_expect("p1"));
    futoin_tool_host_done(host_next_expect("x")); /* then the others */
    futoin_tool_iterate(g_fx.tool, 0);
    futoin_tool_host_done(host_next_expect("a2"));
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0);
    x->api->free(x);
    futoin_tool_set_host_bursts(g_fx.tool, 0);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* a branch's host step that starts a nested parallel: the nested branch's
 * first burst comes before a sibling branch's step that waits for the host
 * already, as the reference runs the nested branches inside that step's event */
static void host_nested_branches_go_before_a_waiting_sibling(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    futoin_tool_set_host_bursts(g_fx.tool, 1);
    FutoInAsyncSteps* r = g_fx.root;
    FutoInAsyncSteps* p = r->api->parallel(r, NULL, NULL);
    host_add_str(p, "b1");
    host_add_str(p, "b2");
    r->api->execute(r, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0); /* the parallel starts its branches */
    futoin_tool_iterate(g_fx.tool, 0); /* which leave b1 and b2 to the host */
    FutoInAsyncSteps* hop[2];
    for (int i = 0; i < 2; ++i) {
        FutoInAsyncSteps* s = host_next_expect(i ? "b2" : "b1");
        host_add_str(s, i ? "h2" : "h1");
        host_add_str(s, i ? "B" : "A");
        futoin_tool_host_done(s);
        hop[i] = host_next_expect(i ? "h2" : "h1");
        hop[i]->api->waitExternal(hop[i]);
        futoin_tool_host_done(hop[i]);
    }
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL));
    hop[0]->api->success(hop[0], NULL);
    hop[1]->api->success(hop[1], NULL);
    futoin_tool_iterate(g_fx.tool, 0); /* both branches go on: A and B wait for the host */
    FutoInAsyncSteps* a = host_next_expect("A");
    FutoInAsyncSteps* nested = a->api->parallel(a, NULL, NULL);
    host_add_str(nested, "AA");
    futoin_tool_host_done(a);
    futoin_tool_host_done(host_next_expect("AA"));
    futoin_tool_host_done(host_next_expect("B"));
    assert_null(futoin_tool_host_next(g_fx.tool, NULL, NULL));
    assert_int_equal(futoin_tool_host_pending(g_fx.tool), 0);
    futoin_tool_set_host_bursts(g_fx.tool, 0);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* a C step whose parallel branch is that step again, without end */
static void f_par_forever(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, NULL, f_par_forever, NULL);
}

/* new branches run at once, but within a bound: an endless chain of them
 * cannot hold a host call (nor the host's loop) for ever */
static void host_new_branches_are_bounded(void** state)
{
    (void)state;
    futoin_tool_set_host_exec(g_fx.tool, f_host_marker);
    futoin_tool_set_host_bursts(g_fx.tool, 1);
    FutoInAsyncSteps* r = g_fx.root;
    r->api->add(r, NULL, f_par_forever, NULL);
    r->api->execute(r, NULL, NULL);
    assert_int_equal(futoin_steps_execute_nested(r), 1);
    assert_null(futoin_tool_host_next_of(r, NULL, NULL)); /* returns */
    FutoInAsyncSteps* x = futoin_steps_new(g_fx.tool);
    x->api->add(x, (void*)"x", f_host_marker, NULL);
    x->api->add(x, (void*)"x2", f_host_marker, NULL);
    x->api->execute(x, NULL, NULL);
    futoin_tool_iterate(g_fx.tool, 0);
    futoin_tool_host_done(host_next_expect("x")); /* the other flow goes on */
    for (int i = 0; i < 5; ++i) {
        futoin_tool_iterate(g_fx.tool, 0);
    }
    futoin_tool_host_done(host_next_expect("x2"));
    r->api->cancel(r);
    futoin_tool_iterate(g_fx.tool, 0);
    x->api->free(x);
    futoin_tool_set_host_bursts(g_fx.tool, 0);
    futoin_tool_set_host_exec(g_fx.tool, NULL);
}

/* ---- cross-thread completion ---- */

enum
{
    X_SUCCESS,
    X_ERROR
};

typedef struct xthread
{
    FutoInAsyncTool* tool;
    FutoInAsyncSteps* bsi;
    pthread_t th;
    pthread_t thread_id;
    int started;
    int mode;
    int use_ref;
    int same_in_thread;
    int args_moved;
} xthread;

static xthread g_x;
static pthread_t g_main_thread;
static pthread_t g_next_thread;
static int g_same_in_step;

static void* xthread_main(void* p)
{
    xthread* x = p;
    x->thread_id = pthread_self();
    x->same_in_thread = x->bsi->api->is_same_thread(x->bsi);
    if (x->mode == X_SUCCESS) {
        FutoInArgs a = args0();
        a.arg0 = val_i32(42);
        x->bsi->api->success(x->bsi, &a);
        x->args_moved = a.arg0.type == NULL;
    } else {
        x->bsi->api->handle_error(x->bsi, "ThreadError", "from thread");
    }
    /* the bsi must not be touched after completing it */
    if (x->use_ref) {
        futoin_tool_unref(x->tool);
    }
    return NULL;
}

static void xthread_reset(int mode, int use_ref)
{
    memset(&g_x, 0, sizeof(g_x));
    g_x.tool = g_fx.tool;
    g_x.mode = mode;
    g_x.use_ref = use_ref;
    g_main_thread = pthread_self();
    g_next_thread = g_main_thread;
    g_same_in_step = -1;
}

static void xthread_join(void)
{
    if (g_x.started) {
        assert_int_equal(pthread_join(g_x.th, NULL), 0);
        g_x.started = 0;
    }
}

static void f_spawn(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    trace("spawn");
    g_same_in_step = bsi->api->is_same_thread(bsi);
    bsi->api->waitExternal(bsi);
    g_x.bsi = bsi;
    if (g_x.use_ref) {
        futoin_tool_ref(g_x.tool);
    }
    if (pthread_create(&g_x.th, NULL, xthread_main, &g_x) == 0) {
        g_x.started = 1;
    } else {
        if (g_x.use_ref) {
            futoin_tool_unref(g_x.tool);
        }
        bsi->api->handle_error(bsi, "SpawnFailed", NULL);
    }
}

static void f_next(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    g_next_thread = pthread_self();
    if (args->arg0.type) {
        trace("next:%d", (int)args->arg0.i32);
    } else {
        trace("next");
    }
}

static void eh_thread(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    g_next_thread = pthread_self();
    trace("eh:%s:%s", code, error_info(bsi));
    bsi->api->success(bsi, NULL);
}

static void cross_thread_success_with_ref(void** state)
{
    (void)state;
    xthread_reset(X_SUCCESS, 1);
    assert_int_equal(g_fx.root->api->is_same_thread(g_fx.root), 1);
    g_fx.root->api->add(g_fx.root, NULL, f_spawn, NULL);
    g_fx.root->api->add(g_fx.root, NULL, f_next, NULL);
    /* run() only returns after the thread's unref: the next step has run */
    run_root();
    xthread_join();
    assert_trace("spawn|next:42");
    assert_int_equal(g_same_in_step, 1);
    assert_int_equal(g_x.same_in_thread, 0);
    assert_int_equal(g_x.args_moved, 1);
    assert_false(pthread_equal(g_x.thread_id, g_main_thread));
    /* the continuation ran on the loop thread, not on the completing one */
    assert_true(pthread_equal(g_next_thread, g_main_thread));
    assert_false(pthread_equal(g_next_thread, g_x.thread_id));
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), -1);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0); /* no reference left */
}

static pthread_t g_post_thread;
static int g_posted;

static void posted_call(void* data)
{
    g_post_thread = pthread_self();
    g_posted += *(int*)data;
    futoin_tool_unref(g_fx.tool);
}

static void* post_from_thread(void* p)
{
    assert_int_equal(futoin_tool_post(g_fx.tool, posted_call, p), 0);
    return NULL;
}

/* futoin_tool_post() from another thread wakes run() and runs on the loop
 * thread; one left when the tool is freed runs then */
static void post_runs_on_the_loop_thread(void** state)
{
    (void)state;
    static int one = 1;
    static int ten = 10;
    g_posted = 0;
    futoin_tool_ref(g_fx.tool);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, post_from_thread, &one), 0);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0); /* the call's unref ends it */
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(g_posted, 1);
    assert_true(pthread_equal(g_post_thread, pthread_self()));
    assert_int_equal(futoin_tool_post(NULL, posted_call, &one), -1);
    assert_int_equal(futoin_tool_post(g_fx.tool, NULL, &one), -1);
    futoin_tool_ref(g_fx.tool); /* the call's unref */
    assert_int_equal(futoin_tool_post(g_fx.tool, posted_call, &ten), 0);
    g_fx.root->api->free(g_fx.root);
    g_fx.root = NULL;
    futoin_tool_free(g_fx.tool);
    g_fx.tool = NULL;
    assert_int_equal(g_posted, 11);
}

static void post_again(void* data)
{
    ++*(int*)data;
}

static void post_from_a_post(void* data)
{
    ++*(int*)data;
    assert_int_equal(futoin_tool_post(g_fx.tool, post_again, data), 0);
}

/* a post made by a post drained at futoin_tool_free() runs too (it was
 * never run and leaked) */
static void post_made_while_the_tool_is_freed_runs(void** state)
{
    (void)state;
    static int n;
    n = 0;
    g_fx.root->api->free(g_fx.root);
    g_fx.root = NULL;
    assert_int_equal(futoin_tool_post(g_fx.tool, post_from_a_post, &n), 0);
    futoin_tool_free(g_fx.tool);
    g_fx.tool = NULL;
    assert_int_equal(n, 2);
}

static void cross_thread_handle_error(void** state)
{
    (void)state;
    xthread_reset(X_ERROR, 1);
    g_fx.root->api->add(g_fx.root, NULL, f_spawn, eh_thread);
    g_fx.root->api->add(g_fx.root, NULL, f_next, NULL);
    run_root();
    xthread_join();
    assert_trace("spawn|eh:ThreadError:from thread|next");
    assert_int_equal(g_x.same_in_thread, 0);
    assert_true(pthread_equal(g_next_thread, g_main_thread));
}

static void cross_thread_unhandled_error(void** state)
{
    (void)state;
    xthread_reset(X_ERROR, 1);
    g_fx.root->api->add(g_fx.root, NULL, f_spawn, NULL);
    g_fx.root->api->add(g_fx.root, NULL, f_next, NULL);
    run_root();
    xthread_join();
    assert_trace("spawn|unhandled:ThreadError:from thread");
}

static void cross_thread_with_host_loop_hooks(void** state)
{
    (void)state;
    hook_rec rec;
    hooks_install(&rec);
    xthread_reset(X_SUCCESS, 0);
    g_fx.root->api->add(g_fx.root, NULL, f_spawn, NULL);
    g_fx.root->api->add(g_fx.root, NULL, f_next, NULL);
    g_fx.root->api->execute(g_fx.root, NULL, on_unhandled);
    assert_int_equal(rec.last, 0);
    /* the step starts the thread and waits: nothing else is pending here */
    int64_t d = futoin_tool_iterate(g_fx.tool, 0);
    assert_trace("spawn");
    xthread_join(); /* the thread has posted its success */
    if (d == -1) {
        assert_int_equal(rec.last, -1);
    }
    assert_true(atomic_load(&rec.wakeups) >= 1);
    assert_int_equal(futoin_tool_next_delay(g_fx.tool), 0);
    assert_int_equal(futoin_tool_iterate(g_fx.tool, 0), -1);
    assert_trace("spawn|next:42");
    assert_true(pthread_equal(g_next_thread, g_main_thread));
    assert_int_equal(g_x.same_in_thread, 0);
    assert_int_equal(rec.last, -1);
    futoin_tool_set_hooks(g_fx.tool, NULL);
}

/* ---- burst ---- */

static void add_flow(FutoInAsyncSteps* r, const char* const* names, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        r->api->add(r, (void*)names[i], f_trace, NULL);
    }
}

static const char* const g_flow_a[] = {"a1", "a2", "a3", "a4"};
static const char* const g_flow_b[] = {"b1", "b2", "b3", "b4"};

static void run_two_flows(uint32_t burst, int set_burst)
{
    FutoInAsyncSteps* a = g_fx.root;
    FutoInAsyncSteps* b = futoin_steps_new(g_fx.tool);
    assert_non_null(b);
    if (set_burst) {
        futoin_tool_set_burst(g_fx.tool, burst);
    }
    add_flow(a, g_flow_a, 4);
    add_flow(b, g_flow_b, 4);
    a->api->execute(a, NULL, on_unhandled);
    b->api->execute(b, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
    b->api->free(b);
}

static void burst_two_interleaves_in_chunks_of_two(void** state)
{
    (void)state;
    run_two_flows(2, 1);
    assert_trace("a1|a2|b1|b2|a3|a4|b3|b4");
}

static void burst_one_alternates(void** state)
{
    (void)state;
    run_two_flows(1, 1);
    assert_trace("a1|b1|a2|b2|a3|b3|a4|b4");
}

static void burst_default_runs_flow_through(void** state)
{
    (void)state;
    run_two_flows(0, 0); /* default 100 */
    assert_trace("a1|a2|a3|a4|b1|b2|b3|b4");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(immediates_run_fifo),
            T(iterate_ready_leaves_due_timers),
            T(iterate_timers_leaves_ready_immediates),
            T(timers_fire_in_deadline_order),
            T(timers_equal_deadlines_fire_in_setting_order),
            T(virtual_time_jumps_to_deadline_without_sleeping),
            T(cancel_immediate_before_it_runs),
            T(cancel_deferred_before_it_runs),
            T(handle_valid_while_scheduled_then_invalid),
            T(cancel_after_run_is_harmless),
            T(zeroed_handle_is_invalid),
            T(handle_of_another_tool_is_invalid),
            T(null_callback_gives_invalid_handle),
            T(run_returns_zero_when_nothing_is_left),
            T(run_reentrant_returns_minus_one),
            T(iterate_max_tasks_bounds_work),
            T(iterate_returns_delay_to_next_timer),
            T(run_one_runs_exactly_one_event),
            T(run_one_orders_a_zero_timer_among_the_immediates),
            T(next_delay_reports_without_running),
            T(advance_moves_virtual_time),
            T(a_busy_virtual_clock_still_reaches_its_timers),
            T(custom_clock_drives_timers),
            T(hooks_arm_reports_next_wakeup),
            T(hooks_rearmed_when_a_cancel_from_outside_stops_a_timer),
            T(hooks_not_rearmed_per_step_while_the_deadline_holds),
            T(host_nested_flow_runs_alone),
            T(host_next_of_takes_from_the_middle),
            T(args_hook_sees_values_of_c_steps),
            T(in_event_tells_an_event_on_the_stack),
            T(event_open_lets_an_event_run_flows_nested),
            T(host_nested_flow_runs_new_branches),
            T(host_new_branches_go_first),
            T(host_nested_branches_go_before_a_waiting_sibling),
            T(host_new_branches_are_bounded),
            T(host_add_data_lives_with_the_step),
            T(is_top_tells_the_innermost_step),
            T(host_run_spends_burst_and_follows),
            T(cross_thread_success_with_ref),
            T(post_runs_on_the_loop_thread),
            T(post_made_while_the_tool_is_freed_runs),
            T(cross_thread_handle_error),
            T(cross_thread_unhandled_error),
            T(cross_thread_with_host_loop_hooks),
            T(burst_two_interleaves_in_chunks_of_two),
            T(burst_one_alternates),
            T(burst_default_runs_flow_through),
            T(iterate_until_fires_timers_due_by_its_time),
    };
    return cmocka_run_group_tests_name("tool", tests, NULL, NULL);
}
