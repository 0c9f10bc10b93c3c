/* Mutex (spec 2.3): at most `max` flows inside, re-entrant per rootId,
 * waiting flows queued FIFO up to `max_queue`. */
#include "sync.h"

#include <string.h>

const FutoInSyncAPI fmutex_api = {{{fmutex_lock, fmutex_unlock}}};

int fmutex_init(fmutex* m, FutoInAsyncTool* tool, uint32_t max, uint32_t max_queue)
{
    memset(m, 0, sizeof(*m));
    *(const FutoInSyncAPI**)&m->b.iface.api = &fmutex_api;
    m->b.kind = FSYNC_MUTEX;
    m->tool = tool;
    m->max = max ? max : 1;
    m->max_queue = max_queue;
    return 0;
}

void fmutex_destroy(fmutex* m)
{
    ftn_free(m->owners);
    m->owners = NULL;
}

FutoInSync* futoin_mutex_new(FutoInAsyncTool* tool, uint32_t max, uint32_t max_queue)
{
    if (!tool) {
        return NULL;
    }
    fmutex* m = ftn_malloc(sizeof(*m));
    if (!m) {
        return NULL;
    }
    fmutex_init(m, tool, max, max_queue);
    m->b.tool = tool;
    ftool_hold(tool);
    return &m->b.iface;
}

static fowner* owner_find(fmutex* m, ptrdiff_t rid)
{
    for (uint32_t i = 0; i < m->nowners; ++i) {
        if (m->owners[i].root_id == rid) {
            return &m->owners[i];
        }
    }
    return NULL;
}

static int owner_add(fmutex* m, ptrdiff_t rid)
{
    if (m->nowners == m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 4;
        fowner* o = ftn_realloc(m->owners, cap * sizeof(*o));
        if (!o) {
            return -1;
        }
        m->owners = o;
        m->cap = cap;
    }
    m->owners[m->nowners].root_id = rid;
    m->owners[m->nowners].count = 1;
    ++m->nowners;
    return 0;
}

static void mutex_promote(fmutex* m)
{
    fwaiter* w;
    while (m->nowners < m->max && (w = fwaitq_pop(&m->queue)) != NULL) {
        if (owner_add(m, w->root_id) != 0) {
            w->bsi->api->handle_error(w->bsi, FUTOIN_ERR_INTERNAL_ERROR, "out of memory");
            continue;
        }
        w->granted = 1;
        if (w->on_grant) {
            *w->on_grant = 1;
        }
        w->bsi->api->success(w->bsi, NULL);
    }
}

void fmutex_stats(const fmutex* m, FutoInSyncStats* stats)
{
    stats->inside = m->nowners;
    stats->mutex_waiting = m->queue.len;
}

void fmutex_release(fmutex* m, ptrdiff_t rid)
{
    fowner* o = owner_find(m, rid);
    if (!o) {
        return;
    }
    if (--o->count == 0) {
        *o = m->owners[--m->nowners];
        mutex_promote(m);
    }
}

int fmutex_try(fmutex* m, ptrdiff_t rid)
{
    fowner* o = owner_find(m, rid);
    if (o) {
        ++o->count;
        return 1;
    }
    return m->nowners < m->max && !m->queue.head && owner_add(m, rid) == 0;
}

int fmutex_idle(const fmutex* m)
{
    return m->nowners == 0 && m->queue.len == 0;
}

static void mutex_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    fwaiter* w = data;
    if (fwaiter_dropped(w)) {
        return;
    }
    fmutex* m = w->owner;
    if (w->granted) {
        fmutex_release(m, w->root_id); /* granted but never entered */
        if (w->on_grant) {
            *w->on_grant = 0;
        }
    } else {
        fwaitq_remove(&m->queue, w);
    }
    fsync_reap(&m->b);
}

void fmutex_lock_held(FutoInAsyncSteps* bsi, FutoInSync* sync, int* held)
{
    fmutex* m = (fmutex*)sync;
    ptrdiff_t rid = bsi->api->rootId(bsi);
    fowner* o = owner_find(m, rid);
    if (o) {
        ++o->count;
        if (held) {
            *held = 1;
        }
        return;
    }
    if (m->nowners < m->max && !m->queue.head) {
        if (owner_add(m, rid) != 0) {
            bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "out of memory");
        } else if (held) {
            *held = 1;
        }
        return;
    }
    fwaiter* w = fwaitq_wait(&m->queue, m->max_queue, bsi, rid, m, "Mutex queue limit", mutex_cancel);
    if (w) {
        w->on_grant = held;
    }
}

void fmutex_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    fmutex_lock_held(bsi, sync, NULL);
}

void fmutex_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    fmutex* m = (fmutex*)sync;
    fmutex_release(m, bsi->api->rootId(bsi));
    fsync_reap(&m->b);
}
