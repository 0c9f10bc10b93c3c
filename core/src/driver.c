/* The built-in blocking driver for plain C: iterate until no immediate, timer
 * or reference is left, sleeping on a condition variable in between. */
#include "internal.h"

#include <errno.h>
#include <time.h>

void futoin_tool_ref(FutoInAsyncTool* t)
{
    if (t) {
        atomic_fetch_add(&t->refs, 1);
    }
}

void futoin_tool_unref(FutoInAsyncTool* t)
{
    if (!t) {
        return;
    }
    if (atomic_fetch_sub(&t->refs, 1) == 1) {
        pthread_mutex_lock(&t->lock);
        if (t->sleeping) {
            pthread_cond_signal(&t->cond);
        }
        pthread_mutex_unlock(&t->lock);
        if (t->has_hooks && t->hooks.wakeup) {
            t->hooks.wakeup(t->hooks.data);
        }
    }
}

static void driver_wait(FutoInAsyncTool* t, int64_t delay_ms)
{
    struct timespec until;
    if (delay_ms > 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += delay_ms / 1000;
        until.tv_nsec += (long)(delay_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_nsec -= 1000000000L;
            ++until.tv_sec;
        }
    }
    pthread_mutex_lock(&t->lock);
    if (!t->posts && (delay_ms > 0 || atomic_load(&t->refs) > 0)) {
        t->sleeping = 1;
        if (delay_ms > 0) {
            int rc = pthread_cond_timedwait(&t->cond, &t->lock, &until);
            (void)rc;
        } else {
            pthread_cond_wait(&t->cond, &t->lock);
        }
        t->sleeping = 0;
    }
    pthread_mutex_unlock(&t->lock);
}

int futoin_tool_wait(FutoInAsyncTool* t, int64_t max_ms)
{
    if (!t) {
        return -1;
    }
    int64_t d = futoin_tool_next_delay(t);
    if (d == 0 || (d > 0 && t->virtual_time)) {
        return 0;
    }
    if (d < 0 && atomic_load(&t->refs) == 0
        && !atomic_load_explicit(&t->has_posts, memory_order_acquire)) {
        return -1;
    }
    if (max_ms >= 0 && (d < 0 || d > max_ms)) {
        d = max_ms > 0 ? max_ms : 1;
    }
    driver_wait(t, d);
    return 0;
}

int futoin_tool_run(FutoInAsyncTool* t)
{
    if (!t || t->running || t->host_active || t->dying) {
        return -1;
    }
    do {
        futoin_tool_iterate(t, 0);
    } while (futoin_tool_wait(t, -1) == 0);
    return 0;
}
