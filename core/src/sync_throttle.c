/* Throttle (spec 2.4): at most `max` entries per period; the period timer
 * runs only while entries were counted or flows wait, so an idle throttle
 * keeps no loop alive. */
#include "sync.h"

#include <string.h>

const FutoInSyncAPI fthrottle_api = {{{fthrottle_lock, fthrottle_unlock}}};

void fthrottle_init(
        fthrottle* t, FutoInAsyncTool* tool, uint32_t max, uint32_t period_ms, uint32_t max_queue)
{
    memset(t, 0, sizeof(*t));
    *(const FutoInSyncAPI**)&t->b.iface.api = &fthrottle_api;
    t->b.kind = FSYNC_THROTTLE;
    t->tool = tool;
    t->max = max ? max : 1;
    t->period_ms = period_ms ? period_ms : 1;
    t->max_queue = max_queue;
}

void fthrottle_destroy(fthrottle* t)
{
    if (t->timer) {
        ftool_timer_stop(t->tool, t->timer, t->timer_gen);
        t->timer = NULL;
    }
}

FutoInSync* futoin_throttle_new(
        FutoInAsyncTool* tool, uint32_t max, uint32_t period_ms, uint32_t max_queue)
{
    if (!tool) {
        return NULL;
    }
    fthrottle* t = ftn_malloc(sizeof(*t));
    if (!t) {
        return NULL;
    }
    fthrottle_init(t, tool, max, period_ms, max_queue);
    t->b.tool = tool;
    ftool_hold(tool);
    return &t->b.iface;
}

static void throttle_period(void* data);

static void throttle_arm(fthrottle* t)
{
    if (!t->timer) {
        t->timer = ftool_timer_start(t->tool, t->period_ms, throttle_period, t);
        if (t->timer) {
            t->timer_gen = fgen_get(&t->timer->gen);
        }
    }
}

/* a standalone throttle knows who is inside until their unlock() (a
 * limiter's part is left through the limiter's mutex) */
static void throttle_in(fthrottle* t)
{
    if (!t->b.outer) {
        ++t->inside;
    }
}

static void throttle_out(fthrottle* t)
{
    if (t->inside) {
        --t->inside;
    }
}

int fthrottle_idle(const fthrottle* t)
{
    return t->queue.len == 0 && t->inside == 0;
}

/* a period ended: entries count from 0 and waiting flows go in; whether
 * another one runs (entries were counted or flows wait) */
static int throttle_next_period(fthrottle* t)
{
    t->count = 0;
    fwaiter* w;
    while (t->count < t->max && (w = fwaitq_pop(&t->queue)) != NULL) {
        ++t->count;
        throttle_in(t);
        w->granted = 1;
        w->bsi->api->success(w->bsi, NULL);
    }
    return t->count || t->queue.head;
}

/* the tool's timer: a period that started there goes on there, as an
 * interval timer keeps its clock */
static void throttle_period(void* data)
{
    fthrottle* t = data;
    t->timer = NULL;
    if (throttle_next_period(t)) {
        throttle_arm(t);
    }
    fsync_reap(&t->b);
}

/* a period starts (the first entry after an idle time): on the host's
 * timer if its hook takes it, else on the tool's */
static void throttle_start(fthrottle* t)
{
    if (t->timer || t->host_period) {
        return;
    }
    FutoInSync* self = t->b.outer ? &t->b.outer->iface : &t->b.iface;
    if (t->period_hook && t->period_hook(t->period_data, self, t->period_ms)) {
        t->host_period = 1;
        return;
    }
    throttle_arm(t);
}

int fthrottle_period_pending(const fthrottle* t)
{
    return t->timer != NULL || t->host_period;
}

/* the Throttle of a Throttle or Limiter of this library, else NULL */
fthrottle* fthrottle_of(FutoInSync* sync)
{
    fsync_base* b = fsync_builtin(sync);
    if (!b) {
        return NULL;
    }
    return b->kind == FSYNC_THROTTLE ? (fthrottle*)b : b->kind == FSYNC_LIMITER ? flimiter_throttle(sync) : NULL;
}

int futoin_sync_set_period_hook(
        FutoInSync* sync, int (*start)(void* data, FutoInSync* sync, uint32_t period_ms), void* data)
{
    fthrottle* t = fthrottle_of(sync);
    if (!t) {
        return -1;
    }
    t->period_hook = start;
    t->period_data = data;
    return 0;
}

int futoin_sync_period_end(FutoInSync* sync)
{
    fthrottle* t = fthrottle_of(sync);
    if (!t || !t->host_period) {
        return 0;
    }
    const int more = throttle_next_period(t);
    t->host_period = (uint8_t)more;
    fsync_reap(&t->b); /* t may be gone now */
    return more;
}

static void throttle_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    fwaiter* w = data;
    if (fwaiter_dropped(w)) {
        return;
    }
    fthrottle* t = w->owner;
    if (w->granted) {
        throttle_out(t); /* granted but never entered */
    } else {
        fwaitq_remove(&t->queue, w);
    }
    fsync_reap(&t->b);
}

void fthrottle_stats(const fthrottle* t, FutoInSyncStats* stats)
{
    stats->entries = t->count;
    stats->throttle_waiting = t->queue.len;
}

/* an entry counted in this period if there is room and nobody waits */
static int throttle_enter_now(fthrottle* t)
{
    if (t->count < t->max && !t->queue.head) {
        ++t->count;
        throttle_start(t);
        return 1;
    }
    return 0;
}

int fthrottle_try(fthrottle* t)
{
    if (throttle_enter_now(t)) {
        throttle_in(t); /* left by its unlock(), as any lock() */
        return 1;
    }
    return 0;
}

int futoin_throttle_try_enter(FutoInSync* sync)
{
    /* nothing to unlock after it (the caller runs the section as a plain
     * step): not one of those inside */
    return sync && sync->api == &fthrottle_api && throttle_enter_now((fthrottle*)sync);
}

void fthrottle_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    fthrottle* t = (fthrottle*)sync;
    if (fthrottle_try(t)) {
        return;
    }
    fwaitq_wait(&t->queue, t->max_queue, bsi, bsi->api->rootId(bsi), t, "Throttle queue limit",
                throttle_cancel);
    throttle_start(t);
}

void fthrottle_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    (void)bsi;
    fthrottle* t = (fthrottle*)sync;
    throttle_out(t);
    fsync_reap(&t->b);
}
