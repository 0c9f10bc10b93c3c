/* The scheduler (AsyncTool): immediate FIFO, timer heap, generation-checked
 * handles, the clock and the cross-thread post queue. */
#include "internal.h"

#include <string.h>
#include <time.h>

static uint64_t ftool_monotonic_ms(void* data)
{
    (void)data;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

FutoInAsyncTool* futoin_tool_new(void)
{
    FutoInAsyncTool* t = ftn_calloc(sizeof(*t));
    if (!t) {
        return NULL;
    }
    fpool_init(&t->timer_pool, sizeof(ftimer), offsetof(ftimer, next_free), 64);
    fpool_init(&t->task_pool, sizeof(ftask), offsetof(ftask, next), 64);
    fpool_init(&t->step_pool, sizeof(fstep), offsetof(fstep, next), 256);
    fpool_init(&t->strand_pool, sizeof(fstrand), offsetof(fstrand, sib_next), 32);
    fpool_init(&t->small_pool, fstep_small_item_size(), offsetof(falloc, next), 64);
    t->burst = 100;
    t->clock = ftool_monotonic_ms;
    t->owner = fthread_self();
    t->posts_tail = &t->posts;
    t->armed_delay = -2;
    t->armed_deadline = UINT64_MAX;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    return t;
}

static void tool_destroy(FutoInAsyncTool* t)
{
    ftool_drop_posts(t);
    ftool_remote_release(t);
    feng_tool_release(t);
    fpool_destroy(&t->timer_pool);
    fpool_destroy(&t->task_pool);
    fpool_destroy(&t->step_pool);
    fpool_destroy(&t->strand_pool);
    fpool_destroy(&t->small_pool);
    ftn_free(t->heap);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cond);
    ftn_free(t);
}

void futoin_tool_free(FutoInAsyncTool* t)
{
    if (!t || t->dying) {
        return;
    }
    if (t->running) {
        fprintf(stderr, "futoin: InternalError: futoin_tool_free() inside the tool's own callbacks (ignored)\n");
        return;
    }
    /* its loop is over: the posts run here, so this is its loop thread now
     * (a root freed from here would post its free on, never to be run) */
    t->owner = fthread_self();
    /* posts made by posts run too; a chain that never ends is cut (and the
     * rest only freed) */
    for (int round = 0; round < 100 && atomic_load_explicit(&t->has_posts, memory_order_acquire); ++round) {
        ftool_drain_posts(t);
    }
    const unsigned left = t->live + atomic_load_explicit(&t->remote_live, memory_order_acquire);
    if (left) {
        /* misuse, but their memory is the tool's: not a crash later */
        fprintf(stderr,
                "futoin: InternalError: futoin_tool_free(): %u of its roots or sync objects are not freed; "
                "it goes with the last of them\n",
                left);
        t->dying = 1;
        return;
    }
    tool_destroy(t);
}

void ftool_hold(FutoInAsyncTool* t)
{
    ++t->live;
}

void ftool_drop(FutoInAsyncTool* t)
{
    if (--t->live == 0 && t->dying && !atomic_load_explicit(&t->remote_live, memory_order_acquire)) {
        tool_destroy(t);
    }
}

/* a root made on another thread is freed (on the loop thread) */
void ftool_drop_remote(FutoInAsyncTool* t)
{
    if (atomic_fetch_sub_explicit(&t->remote_live, 1, memory_order_acq_rel) == 1 && !t->live && t->dying) {
        tool_destroy(t);
    }
}

void futoin_tool_set_burst(FutoInAsyncTool* t, uint32_t steps)
{
    if (t) {
        t->burst = steps ? steps : 1;
    }
}

uint32_t futoin_tool_burst(const FutoInAsyncTool* t)
{
    return t ? t->burst : 0;
}

void futoin_tool_set_clock(FutoInAsyncTool* t, futoin_clock_fn now, void* data)
{
    if (!t) {
        return;
    }
    t->clock = now ? now : ftool_monotonic_ms;
    t->clock_data = now ? data : NULL;
    t->virtual_time = 0;
}

void futoin_tool_use_virtual_time(FutoInAsyncTool* t)
{
    if (t) {
        t->virtual_time = 1;
    }
}

static void tool_arm(FutoInAsyncTool* t, int64_t d);

void futoin_tool_advance(FutoInAsyncTool* t, uint64_t ms)
{
    if (t && t->virtual_time) {
        t->vnow += ms;
        tool_arm(t, futoin_tool_next_delay(t)); /* the same deadline is nearer now */
    }
}

/* rootId() is unique in the process (a sync object may serve flows of
 * several tools): each tool takes blocks of ids from one counter, an atomic
 * step per 65536 roots */
#define ROOT_ID_BLOCK 65536u
static _Atomic uint64_t g_root_ids = 1;

/* off the loop thread: an id of its own from the global counter */
uint64_t ftool_root_id_remote(void)
{
    return atomic_fetch_add_explicit(&g_root_ids, 1, memory_order_relaxed);
}

uint64_t ftool_root_id(FutoInAsyncTool* t)
{
    if (FTN_UNLIKELY(t->next_root_id == t->root_id_end)) {
        t->next_root_id = atomic_fetch_add_explicit(&g_root_ids, ROOT_ID_BLOCK, memory_order_relaxed);
        t->root_id_end = t->next_root_id + ROOT_ID_BLOCK;
    }
    return t->next_root_id++;
}

uint64_t ftool_now(FutoInAsyncTool* t)
{
    return t->virtual_time ? t->vnow : t->clock(t->clock_data);
}

uint64_t futoin_tool_now(FutoInAsyncTool* t)
{
    return t ? ftool_now(t) : 0;
}

void futoin_tool_bind_thread(FutoInAsyncTool* t)
{
    if (t) {
        t->owner = fthread_self();
    }
}


/* ---- immediates ---- */

void ftool_task_push(FutoInAsyncTool* t, ftask* task)
{
    task->next = NULL;
    task->prev = t->q_tail;
    if (t->q_tail) {
        t->q_tail->next = task;
    } else {
        t->q_head = task;
        if (t->has_hooks && t->armed_delay != 0) {
            t->armed_delay = 0;
            t->hooks.arm(t->hooks.data, 0);
        }
    }
    t->q_tail = task;
    task->queued = 1;
    task->seq = t->timer_seq++;
    ++t->q_len;
    if (task->owner_n) {
        ++*task->owner_n;
    }
}

void ftool_task_push_front(FutoInAsyncTool* t, ftask* task)
{
    if (!t->q_head) {
        ftool_task_push(t, task);
        return;
    }
    task->prev = NULL;
    task->next = t->q_head;
    task->seq = t->q_head->seq;
    t->q_head->prev = task;
    t->q_head = task;
    task->queued = 1;
    ++t->q_len;
    if (task->owner_n) {
        ++*task->owner_n;
    }
}

void ftool_task_push_urgent(FutoInAsyncTool* t, ftask* task)
{
    if (!task->queued) {
        ftool_task_push(t, task);
    }
    if (!task->urgent) {
        task->urgent = 1;
        ++t->urgent;
    }
}

static inline void task_unmark(FutoInAsyncTool* t, ftask* task)
{
    if (task->urgent) {
        task->urgent = 0;
        --t->urgent;
    }
    if (task->owner_n) {
        --*task->owner_n;
    }
}

void ftool_task_remove(FutoInAsyncTool* t, ftask* task)
{
    if (!task->queued) {
        return;
    }
    if (task->prev) {
        task->prev->next = task->next;
    } else {
        t->q_head = task->next;
    }
    if (task->next) {
        task->next->prev = task->prev;
    } else {
        t->q_tail = task->prev;
    }
    task->next = task->prev = NULL;
    task->queued = 0;
    --t->q_len;
    task_unmark(t, task);
}

static ftask* ftool_task_pop(FutoInAsyncTool* t)
{
    ftask* task = t->q_head;
    if (task) {
        t->q_head = task->next;
        if (t->q_head) {
            t->q_head->prev = NULL;
        } else {
            t->q_tail = NULL;
        }
        task->next = NULL;
        task->queued = 0;
        --t->q_len;
        task_unmark(t, task);
    }
    return task;
}

FutoInHandle ftool_immediate(FutoInAsyncTool* t, void* data, void (*cb)(void*))
{
    FutoInHandle h = {NULL, NULL, 0};
    if (!cb) {
        return h;
    }
    ftask* task = fpool_get(&t->task_pool);
    if (!task) {
        return h;
    }
    task->cb = cb;
    task->data = data;
    task->pooled = 1;
    task->urgent = 0;
    ftool_task_push(t, task);
    h.data1 = task;
    h.data2 = t;
    h.data3 = (ptrdiff_t)((fgen_get(&task->gen) << 1) | HANDLE_IMMEDIATE);
    return h;
}

/* ---- timers: a binary min-heap ordered by (deadline, seq) ---- */

static inline int ftimer_less(const ftimer* a, const ftimer* b)
{
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_place(FutoInAsyncTool* t, uint32_t i, ftimer* tm)
{
    t->heap[i] = tm;
    tm->heap_idx = i;
}

static void heap_up(FutoInAsyncTool* t, uint32_t i)
{
    ftimer* tm = t->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!ftimer_less(tm, t->heap[parent])) {
            break;
        }
        heap_place(t, i, t->heap[parent]);
        i = parent;
    }
    heap_place(t, i, tm);
}

static void heap_down(FutoInAsyncTool* t, uint32_t i)
{
    ftimer* tm = t->heap[i];
    for (;;) {
        uint32_t l = 2 * i + 1;
        if (l >= t->heap_len) {
            break;
        }
        uint32_t c = l;
        if (l + 1 < t->heap_len && ftimer_less(t->heap[l + 1], t->heap[l])) {
            c = l + 1;
        }
        if (!ftimer_less(t->heap[c], tm)) {
            break;
        }
        heap_place(t, i, t->heap[c]);
        i = c;
    }
    heap_place(t, i, tm);
}

static void heap_remove(FutoInAsyncTool* t, ftimer* tm)
{
    uint32_t i = tm->heap_idx;
    ftimer* last = t->heap[--t->heap_len];
    tm->heap_idx = UINT32_MAX;
    if (last != tm) {
        heap_place(t, i, last);
        heap_down(t, i);
        heap_up(t, last->heap_idx);
    }
}

ftimer* ftool_timer_start(FutoInAsyncTool* t, uint32_t delay_ms, void (*cb)(void*), void* data)
{
    if (t->heap_len == t->heap_cap) {
        uint32_t cap = t->heap_cap ? t->heap_cap * 2 : 64;
        ftimer** heap = ftn_realloc(t->heap, cap * sizeof(*heap));
        if (!heap) {
            return NULL;
        }
        t->heap = heap;
        t->heap_cap = cap;
    }
    ftimer* tm = fpool_get(&t->timer_pool);
    if (!tm) {
        return NULL;
    }
    tm->deadline = ftool_now(t) + delay_ms;
    tm->seq = t->timer_seq++;
    tm->cb = cb;
    tm->data = data;
    t->heap[t->heap_len] = tm;
    tm->heap_idx = t->heap_len++;
    heap_up(t, tm->heap_idx);
    if (t->has_hooks && t->heap[0] == tm) {
        ftool_rearm(t);
    }
    return tm;
}

static void ftimer_release(FutoInAsyncTool* t, ftimer* tm)
{
    fgen_next(&tm->gen);
    tm->cb = NULL;
    fpool_put(&t->timer_pool, tm);
}

void ftool_timer_stop(FutoInAsyncTool* t, ftimer* tm, uint64_t gen)
{
    if (tm && fgen_get(&tm->gen) == gen && tm->heap_idx != UINT32_MAX) {
        heap_remove(t, tm);
        ftimer_release(t, tm);
        if (!t->running) {
            /* stopped from outside (a cancel): the host must not wait for it;
             * inside, the turn re-arms once at its end */
            ftool_rearm(t);
        }
    }
}

/* the timer at the top of the heap leaves it: 1 with its callback to run,
 * 0 when another thread's cancel claimed it first */
static int timer_take(FutoInAsyncTool* t, ftimer* tm, void (**cb)(void*), void** data)
{
    heap_remove(t, tm);
    *cb = tm->cb;
    *data = tm->data;
    const int mine = fgen_claim(&tm->gen, fgen_get(&tm->gen));
    ftimer_release(t, tm);
    return mine;
}

void ftool_run_due_timers(FutoInAsyncTool* t, uint64_t now)
{
    /* Only timers due at entry: a callback arming a 0 ms timer waits a turn. */
    uint64_t seq_limit = t->timer_seq;
    while (t->heap_len) {
        ftimer* tm = t->heap[0];
        if (tm->deadline > now || tm->seq >= seq_limit) {
            break;
        }
        void (*cb)(void*);
        void* data;
        if (timer_take(t, tm, &cb, &data)) {
            cb(data);
        }
    }
}

FutoInHandle ftool_deferred(FutoInAsyncTool* t, uint32_t delay_ms, void* data, void (*cb)(void*))
{
    FutoInHandle h = {NULL, NULL, 0};
    if (!cb) {
        return h;
    }
    ftimer* tm = ftool_timer_start(t, delay_ms, cb, data);
    if (tm) {
        h.data1 = tm;
        h.data2 = t;
        h.data3 = (ptrdiff_t)((fgen_get(&tm->gen) << 1) | HANDLE_DEFERRED);
    }
    return h;
}

/* delay_ms < 0: immediate() */
FutoInHandle ftool_schedule(FutoInAsyncTool* t, int64_t delay_ms, void* data, void (*cb)(void*))
{
    return delay_ms < 0 ? ftool_immediate(t, data, cb) : ftool_deferred(t, (uint32_t)delay_ms, data, cb);
}

int ftool_handle_valid(FutoInAsyncTool* t, FutoInHandle* h)
{
    if (!h || !h->data1 || h->data2 != (void*)t) {
        return 0;
    }
    uint64_t gen = (uint64_t)h->data3 >> 1;
    if ((h->data3 & 1) == HANDLE_DEFERRED) {
        ftimer* tm = h->data1;
        return fgen_get(&tm->gen) == gen && tm->heap_idx != UINT32_MAX;
    }
    ftask* task = h->data1;
    return fgen_get(&task->gen) == gen && task->queued;
}

/* the use of h's task or timer leaves its queue or heap, if its
 * generation is still `gen` */
static void handle_end(FutoInAsyncTool* t, const FutoInHandle* h, uint64_t gen)
{
    if ((h->data3 & 1) == HANDLE_DEFERRED) {
        ftool_timer_stop(t, h->data1, gen);
        return;
    }
    ftask* task = h->data1;
    if (fgen_get(&task->gen) == gen && task->queued) {
        ftool_task_remove(t, task);
        fgen_next(&task->gen);
        fpool_put(&t->task_pool, task);
    }
}

void ftool_handle_cancel(FutoInAsyncTool* t, FutoInHandle* h)
{
    if (!h || !h->data1 || h->data2 != (void*)t) {
        return;
    }
    handle_end(t, h, (uint64_t)h->data3 >> 1);
    h->data1 = NULL;
}

void ftool_handle_drop(FutoInAsyncTool* t, const FutoInHandle* h)
{
    handle_end(t, h, ((uint64_t)h->data3 >> 1) + 1);
}

/* ---- cross-thread posts ---- */

void ftool_post(FutoInAsyncTool* t, fpost* msg)
{
    msg->next = NULL;
    pthread_mutex_lock(&t->lock);
    *t->posts_tail = msg;
    t->posts_tail = &msg->next;
    atomic_store_explicit(&t->has_posts, 1, memory_order_release);
    if (t->sleeping) {
        pthread_cond_signal(&t->cond);
    }
    pthread_mutex_unlock(&t->lock);
    if (t->has_hooks && t->hooks.wakeup) {
        t->hooks.wakeup(t->hooks.data);
    }
}

static void post_call(fpost* m)
{
    m->call(m->call_data);
}

int futoin_tool_post(FutoInAsyncTool* t, void (*fn)(void* data), void* data)
{
    if (!t || !fn) {
        return -1;
    }
    fpost* m = ftn_calloc(sizeof(*m));
    if (!m) {
        return -1;
    }
    m->fn = post_call;
    m->call = fn;
    m->call_data = data;
    ftool_post(t, m);
    return 0;
}

static void post_free(fpost* m)
{
    if (m->kept) {
        return;
    }
    fargs_reset(&m->args);
    ftn_free(m->code);
    ftn_free(m->info);
    ftn_free(m);
}

/* take every post (run each, or only free it) */
static void posts_take(FutoInAsyncTool* t, int run)
{
    pthread_mutex_lock(&t->lock);
    fpost* list = t->posts;
    t->posts = NULL;
    t->posts_tail = &t->posts;
    atomic_store_explicit(&t->has_posts, 0, memory_order_relaxed);
    pthread_mutex_unlock(&t->lock);
    while (list) {
        fpost* next = list->next;
        if (run) {
            list->fn(list);
        }
        post_free(list);
        list = next;
    }
}

/* posts left at free() past the rounds it runs: freed without running */
void ftool_drop_posts(FutoInAsyncTool* t)
{
    posts_take(t, 0);
}

void ftool_drain_posts(FutoInAsyncTool* t)
{
    if (atomic_load_explicit(&t->has_posts, memory_order_acquire)) {
        posts_take(t, 1);
    }
}

/* ---- one non-blocking turn, shared by every driver ---- */

int64_t futoin_tool_next_delay(FutoInAsyncTool* t)
{
    if (!t) {
        return -1;
    }
    if (t->q_head || atomic_load_explicit(&t->has_posts, memory_order_acquire)) {
        return 0;
    }
    if (!t->heap_len) {
        return -1;
    }
    uint64_t now = ftool_now(t);
    uint64_t deadline = t->heap[0]->deadline;
    return deadline > now ? (int64_t)(deadline - now) : 0;
}

/* arm the host for delay `d` (from futoin_tool_next_delay) */
static void tool_arm(FutoInAsyncTool* t, int64_t d)
{
    if (t->has_hooks && (d != t->armed_delay || d > 0)) {
        t->armed_delay = d;
        t->armed_deadline = d > 0 ? t->heap[0]->deadline : UINT64_MAX;
        t->hooks.arm(t->hooks.data, d);
    }
}

void ftool_rearm(FutoInAsyncTool* t)
{
    if (!t->has_hooks) {
        return;
    }
    /* the host's timer for the same earliest deadline still holds: no clock
     * read and no re-arm per step (iterate() and run_one() re-arm fully) */
    if (t->armed_delay > 0 && !t->q_head && t->heap_len && t->heap[0]->deadline == t->armed_deadline
            && !atomic_load_explicit(&t->has_posts, memory_order_acquire)) {
        return;
    }
    tool_arm(t, futoin_tool_next_delay(t));
}

void futoin_tool_set_hooks(FutoInAsyncTool* t, const FutoInLoopHooks* hooks)
{
    if (!t) {
        return;
    }
    if (hooks && hooks->arm) {
        t->hooks = *hooks;
        t->has_hooks = 1;
        t->armed_delay = -2;
        t->armed_deadline = UINT64_MAX;
        ftool_rearm(t);
    } else {
        memset(&t->hooks, 0, sizeof(t->hooks));
        t->has_hooks = 0;
    }
}

/* a pooled task goes back to the pool before its callback, which may post */
static inline void task_run(FutoInAsyncTool* t, ftask* task)
{
    if (task->pooled) {
        void (*cb)(void*) = task->cb;
        void* data = task->data;
        const int mine = fgen_claim(&task->gen, fgen_get(&task->gen));
        fgen_next(&task->gen);
        fpool_put(&t->task_pool, task);
        if (mine) { /* else another thread's cancel came first */
            cb(data);
        }
    } else {
        task->cb(task->data);
    }
}

/* what due timers queued to finish in their event (a step timeout's error
 * handlers), in queue order */
static void run_urgent(FutoInAsyncTool* t)
{
    for (ftask* u = t->q_head; t->urgent && u;) {
        if (u->urgent) {
            ftool_task_remove(t, u);
            task_run(t, u);
            u = t->q_head; /* the run may change the queue */
        } else {
            u = u->next;
        }
    }
}

int futoin_tool_in_event(const FutoInAsyncTool* t)
{
    return t && t->running;
}

uint32_t futoin_tool_host_taken(const FutoInAsyncTool* t)
{
    return t ? t->host_active : 0;
}

int futoin_tool_event_open(FutoInAsyncTool* t)
{
    if (!t || !ftool_is_loop_thread(t)) {
        return -1;
    }
    const int was = t->running;
    t->running = 0;
    return was;
}

void futoin_tool_event_close(FutoInAsyncTool* t, int token)
{
    if (t && token >= 0) {
        t->running = token;
    }
}

int futoin_tool_run_one(FutoInAsyncTool* t)
{
    if (!t || t->running || t->dying) {
        return 0;
    }
    t->running = 1;
    if (FTN_UNLIKELY(!fthread_same(t->owner, fthread_self()))) {
        t->owner = fthread_self();
    }
    ftool_drain_posts(t);
    int ran = 0;
    /* the order of iterate(): a due timer first, then the oldest immediate,
     * else (virtual time) the clock moves to the next timer. Events of a flow
     * the host is inside a step of are held until that host_done(): the next
     * other one runs; 0 when there is none */
    const int busy = t->host_active != 0;
    int held = 0;
    ftimer* tm = t->heap_len ? t->heap[0] : NULL;
    if (tm && FTN_UNLIKELY(busy) && feng_event_waits(tm->cb, tm->data)) {
        tm = NULL;
        held = 1; /* nor does the clock move past it */
    } else if (tm && tm->deadline > ftool_now(t)) {
        tm = NULL;
    }
    ftask* task = t->q_head;
    while (FTN_UNLIKELY(busy) && task && feng_event_waits(task->cb, task->data)) {
        task = task->next;
        held = 1;
    }
    if (tm && task && t->virtual_time && task->seq < tm->seq) {
        /* in virtual time a timer due now (a 0 ms one) comes after what was
         * queued before it, as in a test scheduler's single event queue */
        tm = NULL;
    } else if (tm) {
        task = NULL;
    }
    if (!tm && !task && t->heap_len && t->virtual_time && !held) {
        tm = t->heap[0];
        t->vnow = tm->deadline;
    }
    if (!tm && !task && held) {
        t->running = 0;
        return 0;
    }
    fflow* turned = NULL;
    uint32_t gen = 0;
    if (task) {
        ftool_task_remove(t, task);
        turned = feng_event_flow(task->cb, task->data, &gen);
        task_run(t, task);
        ran = 1;
        run_urgent(t); /* a failed branch's parallel handlers */
    } else if (tm) {
        void (*cb)(void*);
        void* data;
        if (timer_take(t, tm, &cb, &data)) {
            cb(data);
        }
        ran = 1;
        run_urgent(t);
    }
    t->running = 0;
    if (turned) {
        feng_event_after(turned, gen);
    }
    tool_arm(t, futoin_tool_next_delay(t));
    return ran;
}

/* turns of work in a row after which a virtual clock moves on anyway: an
 * endless loop stopped by a timer (cancel after N ms, as the C++
 * reference's tests do) would hang it for good otherwise; 10,000 turns are at
 * least 10,000 iterations of a loop of parallel steps, 1,000,000 steps of
 * a flow that never waits */
#define VIRTUAL_BUSY_TURNS 10000

/* the virtual clock jumps to the next timer when nothing else is to run,
 * or after a long spell of work */
static void virtual_clock_turn(FutoInAsyncTool* t)
{
    if (!t->q_head) {
        t->busy_turns = 0;
    }
    if (t->heap_len && t->heap[0]->deadline > t->vnow && (!t->q_head || ++t->busy_turns >= VIRTUAL_BUSY_TURNS)) {
        t->vnow = t->heap[0]->deadline;
        t->busy_turns = 0;
    }
}

enum { IT_READY, IT_ALL, IT_TIMERS };

/* timers due by min(now, until) */
static int64_t iterate_until(FutoInAsyncTool* t, uint32_t max_tasks, int mode, uint64_t until)
{
    if (!t || t->dying) {
        return -1;
    }
    if (t->running || t->host_active) {
        return 0; /* nested in the tool's callbacks or a host step: nothing runs */
    }
    t->running = 1;
    if (FTN_UNLIKELY(!fthread_same(t->owner, fthread_self()))) {
        t->owner = fthread_self();
    }
    ftool_drain_posts(t);
    const int timers = mode != IT_READY;
    if (timers && t->virtual_time) {
        virtual_clock_turn(t);
    }
    if (timers && t->heap_len) {
        const uint64_t now = ftool_now(t);
        ftool_run_due_timers(t, now < until ? now : until);
    }
    size_t n = mode == IT_TIMERS ? 0 : max_tasks ? max_tasks : t->q_len;
    if (mode == IT_TIMERS) {
        run_urgent(t);
    }
    while (n-- > 0) {
        ftask* task = ftool_task_pop(t);
        if (!task) {
            break;
        }
        task_run(t, task);
    }
    t->running = 0;
    int64_t d = futoin_tool_next_delay(t);
    tool_arm(t, d);
    return d;
}

static int64_t iterate(FutoInAsyncTool* t, uint32_t max_tasks, int mode)
{
    return iterate_until(t, max_tasks, mode, UINT64_MAX);
}

int64_t futoin_tool_iterate(FutoInAsyncTool* t, uint32_t max_tasks)
{
    return iterate(t, max_tasks, IT_ALL);
}

int64_t futoin_tool_iterate_until(FutoInAsyncTool* t, uint32_t max_tasks, uint64_t until)
{
    return iterate_until(t, max_tasks, IT_ALL, until);
}

int64_t futoin_tool_iterate_ready(FutoInAsyncTool* t, uint32_t max_tasks)
{
    return iterate(t, max_tasks, IT_READY);
}

int64_t futoin_tool_iterate_timers(FutoInAsyncTool* t)
{
    return iterate(t, 0, IT_TIMERS);
}

int futoin_tool_take_deferred(FutoInAsyncTool* t)
{
    if (!t || !t->deferred) {
        return 0;
    }
    t->deferred = 0;
    while (t->defer_head) {
        ftool_defer_unlink(t, t->defer_head);
    }
    return 1;
}

void ftool_defer_link(FutoInAsyncTool* t, fflow* fl)
{
    if (fl->in_defer) {
        return;
    }
    fl->in_defer = 1;
    fl->defer_next = NULL;
    fl->defer_prev = t->defer_tail;
    if (t->defer_tail) {
        t->defer_tail->defer_next = fl;
    } else {
        t->defer_head = fl;
    }
    t->defer_tail = fl;
}

void ftool_defer_unlink(FutoInAsyncTool* t, fflow* fl)
{
    if (!fl->in_defer) {
        return;
    }
    fl->in_defer = 0;
    if (fl->defer_prev) {
        fl->defer_prev->defer_next = fl->defer_next;
    } else {
        t->defer_head = fl->defer_next;
    }
    if (fl->defer_next) {
        fl->defer_next->defer_prev = fl->defer_prev;
    } else {
        t->defer_tail = fl->defer_prev;
    }
    fl->defer_prev = fl->defer_next = NULL;
}

FutoInAsyncSteps* futoin_tool_take_deferred_root(FutoInAsyncTool* t)
{
    fflow* fl = t ? t->defer_head : NULL;
    if (!fl) {
        return NULL;
    }
    ftool_defer_unlink(t, fl);
    return &fl->base.iface;
}

int futoin_tool_has_ready(FutoInAsyncTool* t)
{
    return t && !t->dying && (t->q_head || atomic_load_explicit(&t->has_posts, memory_order_acquire));
}

uint32_t ftool_ticket(FutoInAsyncTool* t)
{
    t->tickets = (t->tickets + 1) & 0x7fffffffu;
    if (!t->tickets) {
        t->tickets = 1;
    }
    return t->tickets;
}
