/* Limiter (spec 2.5): a Mutex(concurrent, max_queue) then a Throttle(rate,
 * period_ms, burst), taken as two sub-steps of the lock step. */
#include "sync.h"

#include <string.h>

typedef struct flimiter
{
    FutoInSync iface;
    int kind;
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

static void lim_take_mutex(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    flimiter* l = data;
    fmutex_lock(bsi, &l->mutex.iface);
}

static void lim_take_throttle(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    flimiter* l = data;
    fthrottle_lock(bsi, &l->throttle.iface);
}

/* Runs when the lock step fails or is cancelled: give the mutex back. */
static void lim_lock_cancel(FutoInAsyncSteps* bsi, void* data)
{
    flimiter* l = data;
    fmutex_release(&l->mutex, bsi->api->rootId(bsi));
}

static void lim_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    flimiter* l = (flimiter*)sync;
    bsi->api->add(bsi, l, lim_take_mutex, NULL);
    bsi->api->add(bsi, l, lim_take_throttle, NULL);
    bsi->api->setCancel(bsi, l, lim_lock_cancel);
}

static void lim_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    flimiter* l = (flimiter*)sync;
    fmutex_release(&l->mutex, bsi->api->rootId(bsi));
}

static const FutoInSyncAPI flimiter_api = {{{lim_lock, lim_unlock}}};

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
    *(const FutoInSyncAPI**)&l->iface.api = &flimiter_api;
    l->kind = FSYNC_LIMITER;
    fmutex_init(&l->mutex, tool, o.concurrent, o.max_queue);
    fthrottle_init(&l->throttle, tool, o.rate, o.period_ms, o.burst);
    return &l->iface;
}

void flimiter_destroy(FutoInSync* sync)
{
    flimiter* l = (flimiter*)sync;
    fmutex_destroy(&l->mutex);
    fthrottle_destroy(&l->throttle);
    ftn_free(l);
}
