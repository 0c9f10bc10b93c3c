/* Limiter (spec 2.5): a Mutex(concurrent, max_queue) then a Throttle(rate,
 * period_ms, burst), taken as two sub-steps of the lock step. */
#include "sync.h"

#include <string.h>

typedef struct flimiter
{
    fsync_base b;
    fmutex mutex;
    fthrottle throttle;
} flimiter;

void futoin_limiter_options_init(FutoInLimiterOptions* opts)
{
    if (opts) {
        opts->concurrent = 1;
        opts->max_queue = 0;
        opts->rate = 1;
        opts->period_ms = 1000;
        opts->burst = 0;
    }
}

/* one lock attempt: whether it holds the mutex part yet */
typedef struct lim_attempt
{
    flimiter* lim;
    int held;
} lim_attempt;

static void lim_take_mutex(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    lim_attempt* a = data;
    fmutex_lock_held(bsi, &a->lim->mutex.b.iface, &a->held);
}

static void lim_take_throttle(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    lim_attempt* a = data;
    fthrottle_lock(bsi, &a->lim->throttle.b.iface);
}

/* Runs when the lock step fails or is cancelled: give back the mutex part,
 * but only if this attempt took it (an outer re-entrant hold stays). */
static void lim_lock_cancel(FutoInAsyncSteps* bsi, void* data)
{
    lim_attempt* a = data;
    if (a->held) {
        a->held = 0;
        fmutex_release(&a->lim->mutex, bsi->api->rootId(bsi));
        fsync_reap(&a->lim->b);
    }
}

static void lim_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    lim_attempt* a = bsi->api->stack(bsi, sizeof(lim_attempt), NULL);
    if (!a) {
        bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "out of memory");
        return;
    }
    a->lim = (flimiter*)sync;
    a->held = 0;
    bsi->api->add(bsi, a, lim_take_mutex, NULL);
    bsi->api->add(bsi, a, lim_take_throttle, NULL);
    bsi->api->setCancel(bsi, a, lim_lock_cancel);
}

static void lim_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    flimiter* l = (flimiter*)sync;
    fmutex_release(&l->mutex, bsi->api->rootId(bsi));
    fsync_reap(&l->b);
}

const FutoInSyncAPI flimiter_api = {{{lim_lock, lim_unlock}}};

/* both parts at once, or neither */
int flimiter_try(FutoInSync* sync, ptrdiff_t rid)
{
    flimiter* l = (flimiter*)sync;
    if (!fmutex_try(&l->mutex, rid)) {
        return 0;
    }
    if (fthrottle_try(&l->throttle)) {
        return 1;
    }
    fmutex_release(&l->mutex, rid);
    return 0;
}

FutoInSync* futoin_limiter_new(FutoInAsyncTool* tool, const FutoInLimiterOptions* opts)
{
    if (!tool) {
        return NULL;
    }
    FutoInLimiterOptions o;
    if (opts) {
        o = *opts;
    } else {
        futoin_limiter_options_init(&o);
    }
    flimiter* l = ftn_malloc(sizeof(*l));
    if (!l) {
        return NULL;
    }
    memset(l, 0, sizeof(*l));
    *(const FutoInSyncAPI**)&l->b.iface.api = &flimiter_api;
    l->b.kind = FSYNC_LIMITER;
    fmutex_init(&l->mutex, tool, o.concurrent, o.max_queue);
    fthrottle_init(&l->throttle, tool, o.rate, o.period_ms, o.burst);
    l->mutex.b.outer = &l->b;
    l->throttle.b.outer = &l->b;
    l->b.tool = tool;
    ftool_hold(tool);
    return &l->b.iface;
}

void flimiter_destroy(FutoInSync* sync)
{
    flimiter* l = (flimiter*)sync;
    fmutex_destroy(&l->mutex);
    fthrottle_destroy(&l->throttle);
    ftn_free(l);
}

int flimiter_idle(const FutoInSync* sync)
{
    const flimiter* l = (const flimiter*)sync;
    return fmutex_idle(&l->mutex) && fthrottle_idle(&l->throttle);
}

fthrottle* flimiter_throttle(FutoInSync* sync)
{
    return &((flimiter*)sync)->throttle;
}

void flimiter_stats(const FutoInSync* sync, FutoInSyncStats* stats)
{
    const flimiter* l = (const flimiter*)sync;
    fmutex_stats(&l->mutex, stats);
    fthrottle_stats(&l->throttle, stats);
}
