/* immediate(), deferred() and their handles from another thread than the
 * tool's loop (the C++ reference's AsyncTool takes them from any thread).
 * The call posts; the loop thread schedules it there. A handle names a
 * record that is reused, never freed before the tool: a word of generation
 * and state, changed by compare-and-swap, says whether it is still to run,
 * so a cancel() from any thread and the loop's firing agree on one outcome. */
#include "internal.h"

enum { RM_FREE = 0, RM_POSTED = 1, RM_ARMED = 2, RM_DONE = 3 };

typedef struct fremote
{
    fpost msg;             /* first: the post that schedules it */
    _Atomic uint64_t word; /* gen << 2 | state */
    struct fremote* next_free;
    struct fremote* next_all;
    FutoInAsyncTool* tool;
    FutoInHandle local; /* the loop's own handle, once armed (loop thread) */
    int64_t delay_ms;   /* < 0: immediate */
    void (*cb)(void*);
    void* data;
} fremote;

static uint64_t word_of(uint64_t gen, int state)
{
    return gen << 2 | (uint64_t)state;
}

/* back to the pool: handles of this use are invalid from now */
static void remote_recycle(fremote* r)
{
    FutoInAsyncTool* t = r->tool;
    uint64_t gen = atomic_load(&r->word) >> 2;
    atomic_store(&r->word, word_of(gen + 1, RM_FREE));
    pthread_mutex_lock(&t->lock);
    r->next_free = t->remote_free;
    t->remote_free = r;
    pthread_mutex_unlock(&t->lock);
}

static void remote_fire(void* data)
{
    fremote* r = data;
    uint64_t w = atomic_load(&r->word);
    uint64_t armed = word_of(w >> 2, RM_ARMED);
    void (*cb)(void*) = r->cb;
    void* cb_data = r->data;
    /* cancelled meanwhile: the other thread won */
    int run = atomic_compare_exchange_strong(&r->word, &armed, word_of(w >> 2, RM_DONE));
    remote_recycle(r);
    if (run) {
        cb(cb_data);
    }
}

/* the post, on the loop thread; the local handle is set before the record
 * says armed, so a cancel() that sees it armed may read it */
static void remote_arm(fpost* msg)
{
    fremote* r = (fremote*)msg;
    uint64_t w = atomic_load(&r->word);
    FutoInAsyncTool* t = r->tool;
    r->local = ftool_schedule(t, r->delay_ms, r, remote_fire);
    if (!r->local.data1) {
        atomic_store(&r->word, word_of(w >> 2, RM_DONE));
        remote_recycle(r);
        return;
    }
    uint64_t posted = word_of(w >> 2, RM_POSTED);
    if (!atomic_compare_exchange_strong(&r->word, &posted, word_of(w >> 2, RM_ARMED))) {
        ftool_handle_cancel(t, &r->local); /* cancelled before it got here */
        remote_recycle(r);
    }
}

/* the post of a cancel() from another thread that claimed the armed local
 * handle (remote_fire() never runs for it): the local one leaves its queue or
 * heap, the record goes back */
static void remote_drop(fpost* msg)
{
    fremote* r = (fremote*)msg;
    ftool_handle_drop(r->tool, &r->local);
    remote_recycle(r);
}

FutoInHandle ftool_remote_schedule(FutoInAsyncTool* t, int64_t delay_ms, void* data, void (*cb)(void*))
{
    FutoInHandle h = {NULL, NULL, 0};
    if (!cb) {
        return h;
    }
    pthread_mutex_lock(&t->lock);
    fremote* r = t->remote_free;
    if (r) {
        t->remote_free = r->next_free;
    }
    pthread_mutex_unlock(&t->lock);
    if (!r) {
        r = ftn_calloc(sizeof(*r));
        if (!r) {
            return h;
        }
        r->tool = t;
        pthread_mutex_lock(&t->lock);
        r->next_all = t->remote_all;
        t->remote_all = r;
        pthread_mutex_unlock(&t->lock);
    }
    uint64_t gen = atomic_load(&r->word) >> 2;
    r->delay_ms = delay_ms;
    r->cb = cb;
    r->data = data;
    r->local.data1 = NULL;
    r->msg.fn = remote_arm;
    r->msg.kept = 1;
    atomic_store(&r->word, word_of(gen, RM_POSTED));
    h.data1 = r;
    h.data2 = &t->remote_mark;
    h.data3 = (ptrdiff_t)gen;
    ftool_post(t, &r->msg);
    return h;
}

int ftool_remote_handle(FutoInAsyncTool* t, const FutoInHandle* h)
{
    return h && h->data1 && h->data2 == (void*)&t->remote_mark;
}

int ftool_remote_valid(const FutoInHandle* h)
{
    fremote* r = h->data1;
    uint64_t w = atomic_load(&r->word);
    int state = (int)(w & 3);
    return (w >> 2) == (uint64_t)h->data3 && (state == RM_POSTED || state == RM_ARMED);
}

/* cancelled from another thread while armed on the loop: nor does its
 * timer stay armed until the deadline (run() would wait for it). The local
 * handle is read under the lock while the record is still this use's
 * (remote_fire() recycles it if the loop took it first; a record goes back
 * in use only through the lock) */
static void remote_cancel_armed(FutoInAsyncTool* t, fremote* r, uint64_t gen)
{
    FutoInHandle local = {NULL, NULL, 0};
    pthread_mutex_lock(&t->lock);
    if (atomic_load(&r->word) == word_of(gen, RM_DONE)) {
        local = r->local;
    }
    pthread_mutex_unlock(&t->lock);
    if (local.data1 && fgen_claim(handle_gen(&local), (uint64_t)local.data3 >> 1)) {
        /* remote_fire() never runs: the post recycles the record (its post
         * is free again, remote_arm() ran) */
        r->msg.fn = remote_drop;
        ftool_post(t, &r->msg);
    }
}

void ftool_remote_cancel(FutoInAsyncTool* t, FutoInHandle* h)
{
    fremote* r = h->data1;
    uint64_t gen = (uint64_t)h->data3;
    h->data1 = NULL;
    for (int state = RM_POSTED; state <= RM_ARMED; ++state) {
        uint64_t w = word_of(gen, state);
        if (atomic_compare_exchange_strong(&r->word, &w, word_of(gen, RM_DONE))) {
            if (state == RM_ARMED && ftool_is_loop_thread(t)) {
                /* its callback goes now, not at its deadline */
                ftool_handle_cancel(t, &r->local);
                remote_recycle(r);
            } else if (state == RM_ARMED) {
                remote_cancel_armed(t, r, gen);
            }
            return; /* else its post or its callback finds it done and recycles it */
        }
    }
}

/* every record, at the tool's end (no post or callback of them runs after) */
void ftool_remote_release(FutoInAsyncTool* t)
{
    for (fremote* r = t->remote_all; r;) {
        fremote* next = r->next_all;
        ftn_free(r);
        r = next;
    }
    t->remote_all = t->remote_free = NULL;
}

/* ---- handles the loop thread made, from another thread ---- */

typedef struct fdrop
{
    fpost msg; /* first: freed as a post */
    FutoInHandle h;
} fdrop;

static void post_drop(fpost* msg)
{
    fdrop* d = (fdrop*)msg;
    ftool_handle_drop(d->h.data2, &d->h);
}

int ftool_handle_valid_off_loop(FutoInAsyncTool* t, const FutoInHandle* h)
{
    return h && h->data1 && h->data2 == (void*)t && fgen_get(handle_gen(h)) == (uint64_t)h->data3 >> 1;
}

/* claimed here, so its callback does not start after this (it may be
 * running on the loop thread already); a post takes it off the queue or
 * heap, else (out of memory) the loop drops it when it gets to it */
void ftool_handle_cancel_off_loop(FutoInAsyncTool* t, FutoInHandle* h)
{
    if (!h || !h->data1 || h->data2 != (void*)t) {
        return;
    }
    const FutoInHandle mine = *h;
    h->data1 = NULL;
    if (!fgen_claim(handle_gen(&mine), (uint64_t)mine.data3 >> 1)) {
        return; /* it ran, or was cancelled */
    }
    fdrop* d = ftn_calloc(sizeof(*d));
    if (d) {
        d->msg.fn = post_drop;
        d->h = mine;
        ftool_post(t, &d->msg);
    }
}
