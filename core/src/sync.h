/* Shared parts of the built-in sync primitives. */
#ifndef FUTOIN_CORE_SYNC_H
#define FUTOIN_CORE_SYNC_H

#include "internal.h"

enum fsync_kind
{
    FSYNC_MUTEX = 1,
    FSYNC_THROTTLE,
    FSYNC_LIMITER
};

/* A flow waiting for a lock; lives in the waiting step's stack() memory so it
 * is released with the step however the step ends. */
typedef struct fwaiter
{
    struct fwaiter* next;
    struct fwaiter* prev;
    struct fwaitq* queue; /* NULL once dequeued */
    FutoInAsyncSteps* bsi;
    ptrdiff_t root_id;
    void* owner; /* the primitive */
    int granted;
    int* on_grant; /* optional: set to 1 when granted, 0 when given back */
} fwaiter;

typedef struct fwaitq
{
    fwaiter* head;
    fwaiter* tail;
    uint32_t len;
} fwaitq;

FTN_HIDDEN void fwaitq_push(fwaitq* q, fwaiter* w);
FTN_HIDDEN void fwaitq_remove(fwaitq* q, fwaiter* w);
/* the first waiter that can still be granted; those whose flow already
 * fails there are dropped on the way */
FTN_HIDDEN fwaiter* fwaitq_pop(fwaitq* q);
/* Queue the caller (or reject it with DefenseRejected + info when full). */
FTN_HIDDEN fwaiter* fwaitq_wait(fwaitq* q, uint32_t max_queue, FutoInAsyncSteps* bsi, ptrdiff_t rid,
                                void* owner, const char* reject_info,
                                FutoInAsyncSteps_cancel_callback on_cancel);

/* What every built-in primitive starts with. The sync steps naming it are
 * its users: futoin_sync_free() of one still in use marks it and the last
 * user gone frees it (a mutex freed while flows hold it or wait for it). */
typedef struct fsync_base
{
    FutoInSync iface;
    int kind;
    int dying;
    uint32_t users;
    FutoInAsyncTool* tool; /* a standalone object's (not one inside a limiter) */
    struct fsync_base* outer; /* a part of a limiter: that limiter */
} fsync_base;

/* the built-in primitive behind `sync`, NULL for one of another provider */
FTN_HIDDEN fsync_base* fsync_builtin(FutoInSync* sync);
FTN_HIDDEN void fsync_use(FutoInSync* sync);
FTN_HIDDEN void fsync_unuse(FutoInSync* sync);
/* Flows also use a primitive through its lock()/unlock() called directly (a
 * provider wrapping a built-in one): one freed while flows hold it or wait
 * in its queue goes when the last of them leaves, which calls this (for a
 * part of a limiter, on the limiter). */
FTN_HIDDEN void fsync_reap(fsync_base* b);

typedef struct fowner
{
    ptrdiff_t root_id;
    uint32_t count;
} fowner;

typedef struct fmutex
{
    fsync_base b;
    FutoInAsyncTool* tool;
    uint32_t max;
    uint32_t max_queue;
    fowner* owners; /* flows inside, with their re-entrance counts */
    uint32_t nowners;
    uint32_t cap;
    fwaitq queue;
} fmutex;

typedef struct fthrottle
{
    fsync_base b;
    FutoInAsyncTool* tool;
    uint32_t max;
    uint32_t period_ms;
    uint32_t max_queue;
    uint32_t count;
    uint32_t inside; /* flows let in and not out yet (unlock()), or granted and not yet in */
    ftimer* timer;
    uint64_t timer_gen;
    fwaitq queue;
    /* futoin_sync_set_period_hook(): periods on the host's timer */
    int (*period_hook)(void* data, FutoInSync* sync, uint32_t period_ms);
    void* period_data;
    uint8_t host_period; /* one runs there now */
} fthrottle;

FTN_HIDDEN extern const FutoInSyncAPI fmutex_api;
FTN_HIDDEN extern const FutoInSyncAPI fthrottle_api;
FTN_HIDDEN extern const FutoInSyncAPI flimiter_api;

/* Enter a built-in primitive at once if it lets in without waiting: 1 when
 * entered (left by its unlock() as usual), 0 for lock() to decide. */
FTN_HIDDEN int fsync_try_enter(FutoInSync* sync, ptrdiff_t rid);
FTN_HIDDEN int fmutex_try(fmutex* m, ptrdiff_t rid);
FTN_HIDDEN int fthrottle_try(fthrottle* t);
FTN_HIDDEN int flimiter_try(FutoInSync* sync, ptrdiff_t rid);

FTN_HIDDEN int fmutex_init(fmutex* m, FutoInAsyncTool* tool, uint32_t max, uint32_t max_queue);
FTN_HIDDEN void fmutex_destroy(fmutex* m);
FTN_HIDDEN void fmutex_lock(FutoInAsyncSteps* bsi, FutoInSync* sync);
/* lock that reports holding: *held is 1 from the moment the mutex is this
 * caller's (at once, or when granted after waiting), 0 if given back */
FTN_HIDDEN void fmutex_lock_held(FutoInAsyncSteps* bsi, FutoInSync* sync, int* held);
FTN_HIDDEN void fmutex_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync);
FTN_HIDDEN void fmutex_release(fmutex* m, ptrdiff_t rid);

FTN_HIDDEN void fthrottle_init(
        fthrottle* t, FutoInAsyncTool* tool, uint32_t max, uint32_t period_ms, uint32_t max_queue);
FTN_HIDDEN void fthrottle_destroy(fthrottle* t);
FTN_HIDDEN void fthrottle_lock(FutoInAsyncSteps* bsi, FutoInSync* sync);
FTN_HIDDEN void fthrottle_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync);

FTN_HIDDEN void fmutex_stats(const fmutex* m, FutoInSyncStats* stats);
FTN_HIDDEN void fthrottle_stats(const fthrottle* t, FutoInSyncStats* stats);
FTN_HIDDEN int fthrottle_period_pending(const fthrottle* t);
FTN_HIDDEN fthrottle* fthrottle_of(FutoInSync* sync);
FTN_HIDDEN fthrottle* flimiter_throttle(FutoInSync* sync);
FTN_HIDDEN void flimiter_stats(const FutoInSync* sync, FutoInSyncStats* stats);
FTN_HIDDEN void flimiter_destroy(FutoInSync* sync);
FTN_HIDDEN int flimiter_idle(const FutoInSync* sync);
FTN_HIDDEN int fmutex_idle(const fmutex* m);
FTN_HIDDEN int fthrottle_idle(const fthrottle* t);
/* a waiter dropped from its queue as its flow failed there (neither queued
 * nor granted): its primitive may be gone, its cancel touches nothing */
static inline int fwaiter_dropped(const fwaiter* w)
{
    return !w->granted && !w->queue;
}

#endif
