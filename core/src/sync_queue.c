/* The wait queue shared by the sync primitives, futoin_sync_free() and the
 * queries on any built-in primitive. */
#include "sync.h"

#include <string.h>

void fwaitq_push(fwaitq* q, fwaiter* w)
{
    w->next = NULL;
    w->prev = q->tail;
    if (q->tail) {
        q->tail->next = w;
    } else {
        q->head = w;
    }
    q->tail = w;
    w->queue = q;
    ++q->len;
}

void fwaitq_remove(fwaitq* q, fwaiter* w)
{
    if (w->queue != q) {
        return;
    }
    if (w->prev) {
        w->prev->next = w->next;
    } else {
        q->head = w->next;
    }
    if (w->next) {
        w->next->prev = w->prev;
    } else {
        q->tail = w->prev;
    }
    w->next = w->prev = NULL;
    w->queue = NULL;
    --q->len;
}

fwaiter* fwaitq_pop(fwaitq* q)
{
    fwaiter* w;
    while ((w = q->head) != NULL) {
        fwaitq_remove(q, w);
        if (!feng_wait_failing(w->bsi)) {
            break;
        }
        /* it leaves with its error (a Timeout in the same tick): granting
         * it would complete a failed step; the next one gets the place */
    }
    return w;
}

fwaiter* fwaitq_wait(fwaitq* q, uint32_t max_queue, FutoInAsyncSteps* bsi, ptrdiff_t rid, void* owner,
                     const char* reject_info, FutoInAsyncSteps_cancel_callback on_cancel)
{
    if (q->len >= max_queue) {
        bsi->api->handle_error(bsi, FUTOIN_ERR_DEFENSE_REJECTED, reject_info);
        return NULL;
    }
    fwaiter* w = bsi->api->stack(bsi, sizeof(fwaiter), NULL);
    if (!w) {
        bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "out of memory");
        return NULL;
    }
    w->on_grant = NULL;
    w->bsi = bsi;
    w->root_id = rid;
    w->owner = owner;
    w->granted = 0;
    fwaitq_push(q, w);
    bsi->api->setCancel(bsi, w, on_cancel);
    return w;
}

int fsync_try_enter(FutoInSync* sync, ptrdiff_t rid)
{
    /* the api tells a built-in from any other FutoInSync */
    if (sync->api == &fmutex_api) {
        return fmutex_try((fmutex*)sync, rid);
    }
    if (sync->api == &fthrottle_api) {
        return fthrottle_try((fthrottle*)sync);
    }
    if (sync->api == &flimiter_api) {
        return flimiter_try(sync, rid);
    }
    return 0;
}

fsync_base* fsync_builtin(FutoInSync* sync)
{
    /* the api tells a built-in from any other FutoInSync: read nothing else
     * before, a foreign one may be smaller */
    if (sync && (sync->api == &fmutex_api || sync->api == &fthrottle_api || sync->api == &flimiter_api)) {
        return (fsync_base*)sync;
    }
    return NULL;
}

static void fsync_destroy(fsync_base* b)
{
    FutoInAsyncTool* t = b->tool;
    switch (b->kind) {
    case FSYNC_MUTEX:
        fmutex_destroy((fmutex*)b);
        ftn_free(b);
        break;
    case FSYNC_THROTTLE:
        fthrottle_destroy((fthrottle*)b);
        ftn_free(b);
        break;
    default:
        flimiter_destroy(&b->iface);
        break;
    }
    ftool_drop(t);
}

void fsync_use(FutoInSync* sync)
{
    fsync_base* b = fsync_builtin(sync);
    if (b) {
        ++b->users;
    }
}

/* no flow holds it or waits in its queue (a throttle's period timer alone
 * keeps nothing: it stops with the object) */
static int fsync_idle(const fsync_base* b)
{
    switch (b->kind) {
    case FSYNC_MUTEX: return fmutex_idle((const fmutex*)b);
    case FSYNC_THROTTLE: return fthrottle_idle((const fthrottle*)b);
    default: return flimiter_idle(&b->iface);
    }
}

void fsync_reap(fsync_base* b)
{
    if (b->outer) {
        b = b->outer;
    }
    if (b->dying && !b->users && fsync_idle(b)) {
        fsync_destroy(b);
    }
}

void fsync_unuse(FutoInSync* sync)
{
    fsync_base* b = fsync_builtin(sync);
    if (b && --b->users == 0) {
        fsync_reap(b);
    }
}

void futoin_sync_free(FutoInSync* sync)
{
    if (!sync) {
        return;
    }
    fsync_base* b = fsync_builtin(sync);
    if (!b) {
        fprintf(stderr, "futoin: futoin_sync_free(): not a sync object of this library (ignored)\n");
    } else if (b->users || !fsync_idle(b)) {
        b->dying = 1;
    } else {
        fsync_destroy(b);
    }
}

int futoin_sync_timer_pending(const FutoInSync* sync)
{
    const fthrottle* t = fthrottle_of((FutoInSync*)sync);
    return t && fthrottle_period_pending(t);
}

int futoin_sync_stats(const FutoInSync* sync, FutoInSyncStats* stats)
{
    if (!stats) {
        return -1;
    }
    memset(stats, 0, sizeof(*stats));
    if (!sync) {
        return -1;
    }
    if (sync->api == &fmutex_api) {
        fmutex_stats((const fmutex*)sync, stats);
    } else if (sync->api == &fthrottle_api) {
        fthrottle_stats((const fthrottle*)sync, stats);
    } else if (sync->api == &flimiter_api) {
        flimiter_stats(sync, stats);
    } else {
        return -1;
    }
    return 0;
}
