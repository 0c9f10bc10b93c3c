/*
 * The step engine. A flow (root) runs as one or more strands: the root's own
 * sequence and one per parallel branch. A strand keeps its active steps as a
 * chain of frames (top -> parent -> ... -> base) and is advanced by a
 * trampoline (strand_run) scheduled as an immediate: no recursion per step,
 * level or iteration, and steps come from the tool's pool.
 */
#include "internal.h"
#include "sync.h"

#include <string.h>

enum
{
    R_CONT, /* keep running this strand */
    R_STOP, /* strand waits or finished; it stays alive */
    R_GONE  /* strand released: do not touch it */
};

static void strand_run(void* data);
static void run_fresh_branches(fflow* fl, uint32_t gen);

/* ---- pools ---- */

static void steps_uncool(FutoInAsyncTool* t);

static fstep* step_get(fflow* fl)
{
    FutoInAsyncTool* t = fl->tool;
    if (FTN_UNLIKELY(!t->step_pool.free_list) && t->cool_head) {
        steps_uncool(t); /* before the pool grows */
    }
    fstep* s = fpool_get(&t->step_pool);
    if (FTN_UNLIKELY(!s)) {
        return NULL;
    }
    /* field by field: a memset of this size becomes `rep stos`, slow to start */
    *(const FutoInAsyncStepsAPI**)&s->iface.api = &ftn_steps_api;
    s->next = NULL;
    s->parent = NULL;
    s->flow = fl;
    s->strand = NULL;
    s->q_head = NULL;
    s->q_tail = NULL;
    s->data = NULL;
    s->fn.exec = NULL;
    s->eh = NULL;
    s->on_cancel = NULL;
    s->cancel_data = NULL;
    s->timer = NULL;
    s->timer_gen = 0;
    s->allocs = NULL;
    s->kind = 0;
    s->state = 0;
    s->flags = 0;
    s->u.loop.count = 0;
    s->u.loop.i = 0;
    s->u.loop.label = NULL;
    return s;
}

/* A slot's generation changes when it goes back to the pool, so a post
 * from another thread for its previous life is recognised as stale. */
static inline void step_retire(fstep* s)
{
    /* loop thread only; another thread reads it once when posting, and a
     * torn or early read there only means the post is dropped as stale */
    ++s->gen;
}

/* the oldest step set aside goes back to the pool */
static void cool_release_head(FutoInAsyncTool* t)
{
    fstep* s = t->cool_head;
    t->cool_head = s->next;
    if (!t->cool_head) {
        t->cool_tail = NULL;
    }
    ++s->gen; /* a post made while it was set aside is stale too */
    fpool_put(&t->step_pool, s);
    --t->cool_n;
}

/* A step that ended while something outside may still hold its pointer
 * (it waited, and no completion of its own came) is set aside for
 * FTN_REUSE_DELAY_MS: a late success() through it is reported as for an
 * ended step instead of completing the step that reuses the memory. */
static FTN_NOINLINE void step_cool(FutoInAsyncTool* t, fstep* s)
{
    if (t->cool_n == FTN_REUSE_MAX_STEPS) {
        cool_release_head(t);
    }
    ++t->cool_n;
    s->next = NULL;
    s->timer_gen = ftool_now(t); /* set aside: when it ended (no timer now) */
    if (t->cool_tail) {
        t->cool_tail->next = s;
    } else {
        t->cool_head = s;
    }
    t->cool_tail = s;
}

/* back to the pool: the steps set aside long enough */
static FTN_NOINLINE void steps_uncool(FutoInAsyncTool* t)
{
    const uint64_t now = ftool_now(t);
    while (t->cool_head && now >= t->cool_head->timer_gen + FTN_REUSE_DELAY_MS) {
        cool_release_head(t);
    }
}

/* A step back to the pool, with the host's data of its own (host_add()). */
static inline void step_put(FutoInAsyncTool* t, fstep* s)
{
    step_retire(s);
    if (s->data == (void*)&s->u) {
        s->data = NULL;
        if (t->host_cleanup) {
            t->host_cleanup(&s->u);
        }
    }
    s->state = FS_FREE;
    if (FTN_UNLIKELY((s->flags & (F_EXPOSED | F_TOLD)) == F_EXPOSED)) {
        step_cool(t, s);
        return;
    }
    fpool_put(&t->step_pool, s);
}

/* Release a chain of queued steps and everything queued under them. */
static void queue_drop(FutoInAsyncTool* t, fstep* head)
{
    while (head) {
        fstep* s = head;
        head = s->next;
        if (s->q_head) {
            s->q_tail->next = head;
            head = s->q_head;
        }
        s->state = FS_CANCEL;
        if (s->kind == FK_SYNC) {
            fsync_unuse(s->u.sync.sync);
        }
        fstep_free_allocs(s);
        step_put(t, s);
    }
}

static void frame_drop_queue(FutoInAsyncTool* t, fstep* f)
{
    fstep* head = f->q_head;
    f->q_head = f->q_tail = NULL;
    queue_drop(t, head);
}

static void strand_init_id(fstrand* st, fflow* fl, fstep* base, ptrdiff_t id);

static void strand_init(fstrand* st, fflow* fl, fstep* base)
{
    strand_init_id(st, fl, base, (ptrdiff_t)ftool_root_id(fl->tool));
}

static void strand_init_id(fstrand* st, fflow* fl, fstep* base, ptrdiff_t id)
{
    memset(&st->task, 0, sizeof(st->task));
    st->task.cb = strand_run;
    st->task.data = st;
    st->task.owner_n = &fl->queued_n;
    st->flow = fl;
    st->base = base;
    st->top = base;
    st->par = NULL;
    st->sib_next = st->sib_prev = NULL;
    st->id = id;
    /* out_args is empty whenever a strand is idle or pooled */
    st->err_pending = 0;
    st->info_pending = 0;
    st->fresh = 0;
    st->in_host_q = 0;
    st->unwinding = 0;
    st->err_crossed = 0;
    st->handlers_only = 0;
    st->after_eh = 0;
    st->owed = 0;
    base->strand = st;
}

/* the host's key of a strand: 0 for the main sequence, else its branch's */
static inline uint32_t strand_key(const fstrand* st)
{
    return st == &st->flow->main ? 0 : (uint32_t)((uint64_t)st->id & 0x3fffffffu) + 1;
}

static inline void strand_schedule(fstrand* st)
{
    if (!st->task.queued) {
        ftool_task_push(st->flow->tool, &st->task);
    }
}

/* its burst is used up before its next step: on to a later turn (after a
 * step timeout's handlers the host is told, as for a completion from outside) */
static void strand_yield(fstrand* st)
{
    FutoInAsyncTool* t = st->flow->tool;
    if (st->handlers_only) {
        st->handlers_only = 0;
        st->after_eh = 1;
        if (!t->eh_run && !st->owed && t->owns_burst
                && t->owns_burst(t->owns_burst_ctx, &st->flow->base.iface, strand_key(st))) {
            /* a step timeout's handlers (a failed branch's parallel's too)
             * left the strand that owns the burst: it goes on in the timer's
             * event, as the reference's root that owns it goes on in its
             * error() (strand_go_on()); not one the host owes an event to
             * (futoin_steps_defer_after()) */
            t->owner_cont = st;
        } else {
            t->deferred = 1;
            ftool_defer_link(t, st->flow);
        }
    } else if (t->eh_run) {
        st->after_eh = 1;
    }
    strand_schedule(st);
}

/* st of t, if strand_yield() left it to go on at once, goes on */
static void strand_go_on(FutoInAsyncTool* t, fstrand* st)
{
    if (FTN_LIKELY(t->owner_cont != st)) {
        return;
    }
    t->owner_cont = NULL;
    if (st->task.queued && (st->flow->flags & FL_RUNNING)) {
        ftool_task_remove(t, &st->task);
        strand_run(st);
    }
}

/* ---- error codes: per strand, double-buffered so a handler may pass the
 * code it received back to handle_error() ---- */

static const char* strand_code(fstrand* st)
{
    const char* c = st->code[st->code_idx].s;
    return c ? c : "";
}

static void strand_copy_code(fstrand* st, const char* code)
{
    uint8_t idx = st->code_idx ^ 1;
    fbuf_set_or(&st->code[idx], code, FUTOIN_ERR_INTERNAL_ERROR);
    st->code_idx = idx;
    st->err_crossed = 0;
}

/* a new error */
static void strand_set_code(fstrand* st, const char* code)
{
    strand_copy_code(st, code);
    fflow_note_error(st->flow, strand_code(st));
}

/* An error from outside (timer, I/O, another thread) waits with its strand:
 * its info reaches the root's error_info only when that strand unwinds, so
 * a sibling branch failing in the same tick cannot overwrite it. */
static void strand_set_external_error(fstrand* st, const char* code, const char* info)
{
    strand_set_code(st, code);
    st->info_pending = fbuf_set(&st->pending_info, info) == 0;
    st->err_pending = 1;
}

/* ---- completion ---- */

/* out of memory: an InternalError the flow can handle */
static void strand_oom(fstrand* st)
{
    strand_set_code(st, FUTOIN_ERR_INTERNAL_ERROR);
    fflow_set_info(st->flow, "out of memory");
    st->err_pending = 1;
}

static void frame_stop_timer(fstep* f)
{
    if (f->timer) {
        ftool_timer_stop(f->flow->tool, f->timer, f->timer_gen);
        f->timer = NULL;
    }
}

static void frame_unlock(fstep* f)
{
    if (f->kind == FK_SYNC && (f->flags & F_LOCKED)) {
        f->flags &= ~F_LOCKED;
        FutoInSync* sync = f->u.sync.sync;
        sync->api->unlock(&f->iface, sync);
    }
}

/* kinds whose frames own nothing beyond the common fields */
#define FAST_POP_KINDS ((1u << FK_STEP) | (1u << FK_LOOP_BODY) | (1u << FK_REPEAT_BODY) | (1u << FK_SYNC_LOCK))

/* Pop the top frame `f` of `st` after it finished (any way). */
static void frame_pop(fstrand* st, fstep* f)
{
    FutoInAsyncTool* t = f->flow->tool;
    if (FTN_LIKELY(!f->timer && !f->on_cancel && !f->allocs && !f->q_head
                   && ((1u << f->kind) & FAST_POP_KINDS))) {
        st->top = f->parent;
        step_put(t, f);
        return;
    }
    f->state = FS_CANCEL;
    frame_stop_timer(f);
    f->on_cancel = NULL;
    frame_unlock(f);
    if (f->kind == FK_SYNC) {
        fsync_unuse(f->u.sync.sync); /* the last user of a freed one frees it */
    }
    fstep_free_allocs(f);
    frame_drop_queue(t, f);
    st->top = f->parent;
    step_put(t, f);
}

static void step_complete(fstrand* st, fstep* f)
{
    if (f->kind == FK_LOOP || f->kind == FK_REPEAT || f->kind == FK_PARALLEL) {
        /* loops and parallel complete without arguments */
        fargs_reset(&st->out_args);
    }
    frame_pop(st, f);
}

/* Cancel-time teardown of one frame: its cancel handler, then release. */
static void frame_abort(fstrand* st, fstep* f)
{
    f->state = FS_CANCEL;
    frame_stop_timer(f);
    FutoInAsyncSteps_cancel_callback cb = f->on_cancel;
    if (cb) {
        f->on_cancel = NULL;
        cb(&f->iface, f->cancel_data);
    }
    frame_pop(st, f);
}

static void branch_release(fstrand* b)
{
    fstep* par = b->par;
    FutoInAsyncTool* t = b->flow->tool;
    if (b->sib_prev) {
        b->sib_prev->sib_next = b->sib_next;
    } else {
        par->u.par.branches = b->sib_next;
    }
    if (b->sib_next) {
        b->sib_next->sib_prev = b->sib_prev;
    }
    ftool_task_remove(t, &b->task);
    if (t->owner_cont == b) {
        t->owner_cont = NULL;
    }
    fargs_reset(&b->out_args);
    fstep* base = b->base;
    base->state = FS_CANCEL;
    fstep_free_allocs(base);
    frame_drop_queue(t, base);
    step_put(t, base);
    fpool_put(&t->strand_pool, b);
}

/* A strand torn down while its step waits for the host to take it (a
 * branch whose sibling failed) leaves the host queue: its step never runs. */
/* the link of a host queue in strand st (`off`: host_link or flow_link) */
static inline fhq_link* fhq_at(fstrand* st, size_t off)
{
    return (fhq_link*)((char*)st + off);
}

static inline void fhq_remove(fhq* q, fstrand* st, size_t off)
{
    fhq_link* l = fhq_at(st, off);
    if (l->prev) {
        fhq_at(l->prev, off)->next = l->next;
    } else {
        q->head = l->next;
    }
    if (l->next) {
        fhq_at(l->next, off)->prev = l->prev;
    } else {
        q->tail = l->prev;
    }
    l->next = l->prev = NULL;
}

static inline void fhq_push(fhq* q, fstrand* st, size_t off, int front)
{
    fhq_link* l = fhq_at(st, off);
    l->prev = front ? NULL : q->tail;
    l->next = front ? q->head : NULL;
    if (l->prev) {
        fhq_at(l->prev, off)->next = st;
    } else {
        q->head = st;
    }
    if (l->next) {
        fhq_at(l->next, off)->prev = st;
    } else {
        q->tail = st;
    }
}

/* take st off the host queue (and its flow's) */
static void host_unlink(FutoInAsyncTool* t, fstrand* st)
{
    fhq_remove(&t->host_q, st, offsetof(fstrand, host_link));
    fhq_remove(&st->flow->host_q, st, offsetof(fstrand, flow_link));
    st->in_host_q = 0;
    --st->flow->host_queued;
}

static void host_unqueue(fstrand* st)
{
    host_unlink(st->flow->tool, st);
    --st->flow->depth; /* as host_done() would have */
    fargs_reset(&st->host_args);
}

/* whether f, the top of st, only waits to be popped on st's next turn: a
 * success() from outside completed it, or completed the step above it
 * (above_ended), after which f has nothing left to run; the JS reference
 * pops such steps inside that success(), a cancel then calls none of
 * their cancel handlers */
static int frame_ended(const fstrand* st, const fstep* f, int above_ended)
{
    if (st->err_pending || (f->flags & F_ERROR)) {
        return 0;
    }
    if (f->kind == FK_PARALLEL) {
        return (f->flags & F_SUCCESS) && f->state == FS_PAR; /* all its branches completed */
    }
    if (f->kind != FK_STEP && f->kind != FK_LOOP_BODY && f->kind != FK_REPEAT_BODY) {
        return 0; /* a sync object's frames: their cancel handlers release it */
    }
    if (f->flags & F_SUCCESS) {
        return f->state == FS_WAIT;
    }
    return above_ended && f->state == FS_SUB && !f->q_head;
}

/* whether s, a frame of st, and every frame above it only wait to be
 * popped (frame_ended) */
static int frames_ended_to(const fstrand* st, const fstep* s)
{
    int ended = 0;
    for (const fstep* f = st->top; f != st->base; f = f->parent) {
        ended = frame_ended(st, f, ended);
        if (!ended || f == s) {
            return ended;
        }
    }
    return 0;
}

/* Cancel everything running in `st0` (and its branches, innermost first)
 * down to its base. Iterative: no recursion per level or branch. */
static void strand_teardown(fstrand* st0)
{
    fstrand* cur = st0;
    int ended = 0; /* the frame popped last on cur had ended (frame_ended) */
    for (;;) {
        if (FTN_UNLIKELY(cur->in_host_q)) {
            host_unqueue(cur);
        }
        fstep* f = cur->top;
        if (f->kind == FK_PARALLEL && f->state == FS_PAR && f->u.par.branches) {
            cur = f->u.par.branches;
            ended = 0;
            continue;
        }
        if (f == cur->base) {
            if (cur == st0) {
                break;
            }
            fstrand* pst = cur->par->strand;
            branch_release(cur);
            cur = pst;
            ended = 0;
            continue;
        }
        ended = frame_ended(cur, f, ended);
        if (ended && f->kind != FK_PARALLEL) {
            frame_pop(cur, f); /* its cancel handler goes uncalled */
        } else {
            frame_abort(cur, f);
        }
    }
    ftool_task_remove(st0->flow->tool, &st0->task);
    st0->err_pending = 0;
    st0->info_pending = 0;
    st0->handlers_only = 0;
    fargs_reset(&st0->out_args);
}

static void parallel_cancel_branches(fstep* par)
{
    while (par->u.par.branches) {
        fstrand* b = par->u.par.branches;
        strand_teardown(b);
        branch_release(b);
    }
    par->u.par.pending = 0;
}

/* ---- flow outcome ---- */

static void flow_finish(fflow* fl)
{
    fargs_reset(&fl->main.out_args);
    frame_drop_queue(fl->tool, &fl->base);
    fl->base.state = FS_IDLE;
    fl->flags &= ~FL_RUNNING;
    fl->main.err_pending = 0;
    fl->main.handlers_only = 0;
}

static void flow_fail(fflow* fl)
{
    const char* code = strand_code(&fl->main);
    flow_finish(fl);
    if (fl->unhandled) {
        fl->unhandled(&fl->base.iface, fl->unhandled_data, code);
    } else {
        fprintf(stderr, "futoin: unhandled error %s: %s\n", code, fflow_info(fl));
    }
}

/* A callback of the flow is on the stack, or the host runs one of its
 * steps. Strands only waiting in the host queue hold depth too (as if
 * called), but nothing of theirs runs: a cancel tears them down at once
 * (strand_teardown() takes them off the queue), as a flow waiting for an
 * event is cancelled at once. */
static inline int flow_in_callback(const fflow* fl)
{
    return fl->depth > fl->host_queued;
}

static void flow_cancel_now(fflow* fl)
{
    ++fl->depth;
    fl->flags &= ~FL_CANCEL_REQ;
    if (fl->flags & FL_RUNNING) {
        strand_teardown(&fl->main);
        flow_finish(fl);
        if (fl->cancelled) {
            fl->cancelled(&fl->base.iface, fl->cancelled_data); /* a free() in it waits */
        }
    }
    fl->flags &= ~FL_CANCEL_REQ;
    --fl->depth;
}

static void flow_deferred(fflow* fl)
{
    if (fl->flags & FL_CANCEL_REQ) {
        flow_cancel_now(fl);
    }
    if (fl->flags & FL_FREE_REQ) {
        fl->flags &= ~FL_FREE_REQ;
        feng_flow_free(fl);
    }
}

/* ---- branches ---- */

static int branch_done(fstrand* b)
{
    fstep* par = b->par;
    fstrand* pst = par->strand;
    branch_release(b);
    if (--par->u.par.pending == 0) {
        par->flags |= F_SUCCESS;
        strand_schedule(pst);
    }
    return R_GONE;
}

static int branch_fail(fstrand* b)
{
    fstep* par = b->par;
    fstrand* pst = par->strand;
    strand_copy_code(pst, strand_code(b)); /* the same error, crossing */
    pst->err_crossed = 1; /* before the siblings' cancel handlers */
    branch_release(b);
    fflow* fl = par->flow;
    fstrand* outer_cause = fl->cancel_cause; /* a branch of a branch being cancelled */
    fl->cancel_cause = pst;
    parallel_cancel_branches(par);
    fl->cancel_cause = outer_cause;
    pst->err_pending = 1;
    ++par->flow->par_failed;
    /* the parallel's handlers run in the event the branch failed in (a
     * timeout's too), the steps after them on a later one: the reference
     * raises a branch's error on the parallel step from outside */
    pst->handlers_only = 1;
    if (!pst->task.queued) {
        /* before work queued earlier (a sibling of an outer parallel) */
        ftool_task_push_front(par->flow->tool, &pst->task);
    }
    ftool_task_push_urgent(par->flow->tool, &pst->task);
    return R_GONE;
}

static void parallel_start(fstrand* st, fstep* par)
{
    FutoInAsyncTool* t = par->flow->tool;
    fstep* head = par->q_head;
    par->q_head = par->q_tail = NULL;
    par->state = FS_PAR;
    fstrand* last = NULL;
    uint32_t n = 0;
    while (head) {
        fstep* c = head;
        head = c->next;
        fstrand* b = fpool_get(&t->strand_pool);
        fstep* base = b ? step_get(par->flow) : NULL;
        if (FTN_UNLIKELY(!base)) {
            if (b) {
                fpool_put(&t->strand_pool, b);
            }
            c->next = head;
            queue_drop(t, c);
            strand_oom(st);
            parallel_cancel_branches(par);
            return;
        }
        base->kind = FK_BRANCH;
        base->state = FS_SUB;
        base->parent = par;
        c->next = NULL;
        c->parent = base;
        base->q_head = base->q_tail = c;
        strand_init(b, par->flow, base);
        b->par = par;
        b->fresh = 1;
        ++par->flow->fresh_n;
        /* keep branches in the order they were added: they run and cancel so */
        b->sib_prev = last;
        if (last) {
            last->sib_next = b;
        } else {
            par->u.par.branches = b;
        }
        last = b;
        strand_schedule(b);
        ++n;
    }
    par->u.par.pending = n;
    if (!n) {
        par->flags |= F_SUCCESS;
    }
}

/* ---- stepping ---- */

static fstep* enqueue_child(fstep* f, int kind)
{
    fstep* c = step_get(f->flow);
    if (FTN_UNLIKELY(!c)) {
        return NULL;
    }
    c->kind = (uint8_t)kind;
    c->state = FS_QUEUED;
    c->parent = f;
    c->data = f->data;
    if (f->q_tail) {
        f->q_tail->next = c;
    } else {
        f->q_head = c;
    }
    f->q_tail = c;
    return c;
}

static void post_exec(fstrand* st, fstep* c)
{
    c->flags &= ~F_DEFER;
    uint16_t fl = c->flags;
    if (fl & F_ERROR) {
        st->err_pending = 1;
    } else if (fl & F_SUCCESS) {
        frame_pop(st, c);
    } else if (c->q_head) {
        c->state = FS_SUB;
    } else if (fl & F_WAIT) {
        c->state = FS_WAIT;
        c->flags |= F_EXPOSED;
    } else {
        frame_pop(st, c); /* implicit success */
    }
}

/* queue the step a sync protects, once its lock is held */
static fstep* sync_protected(fstep* f)
{
    fstep* c = enqueue_child(f, FK_STEP);
    if (c) {
        c->fn.exec = f->fn.exec;
        c->eh = f->u.sync.user_eh;
    }
    return c;
}

static void saved_args_cleanup(void* value)
{
    fargs_reset(value);
}

/* Every kind but FK_STEP (run inline by strand_run) and loop bodies (run by
 * loop_run) starts here. */
static void step_exec(fstrand* st, fstep* c)
{
    switch (c->kind) {
    case FK_SYNC_LOCK: {
        /* no values reach the lock: FK_SYNC kept them for the protected step */
        c->state = FS_EXEC;
        FutoInSync* sync = c->parent->u.sync.sync;
        sync->api->lock(&c->iface, sync);
        post_exec(st, c);
        break;
    }
    case FK_PARALLEL:
        fargs_reset(&st->out_args);
        parallel_start(st, c);
        break;
    case FK_LOOP:
    case FK_REPEAT:
        fargs_reset(&st->out_args);
        c->state = FS_SUB;
        c->flags |= F_FRESH;
        break;
    case FK_SYNC: {
        c->state = FS_SUB;
        /* a built-in primitive that lets in at once needs no lock step: the
         * protected step comes next, with the incoming args */
        if (fsync_try_enter(c->u.sync.sync, st->id)) {
            c->flags |= F_LOCKED;
            if (!sync_protected(c)) {
                strand_oom(st);
            }
            break;
        }
        /* keep the incoming args for the protected step */
        if (!fargs_empty(&st->out_args)) {
            FutoInArgs* saved = fstep_stack(c, sizeof(FutoInArgs), saved_args_cleanup);
            if (saved) {
                *saved = st->out_args;
                fargs_zero(&st->out_args);
                c->u.sync.saved = saved;
            } else {
                fargs_reset(&st->out_args);
            }
        }
        if (!enqueue_child(c, FK_SYNC_LOCK)) {
            strand_oom(st);
        }
        break;
    }
    default:
        frame_pop(st, c);
        break;
    }
}

/* the step leaves the loop for the host, which runs its callback and calls
 * futoin_tool_host_done(); the flow stays in its callback meanwhile (depth
 * held), as if the engine had called it */
static void host_suspend(fstrand* st, fstep* c, uint32_t budget, uint8_t state)
{
    FutoInAsyncTool* t = st->flow->tool;
    c->state = state;
    if (FTN_LIKELY(fargs_empty(&st->out_args))) {
        fargs_zero(&st->host_args); /* a struct copy would be `rep movs` */
    } else {
        st->host_args = st->out_args;
        fargs_zero(&st->out_args);
    }
    st->host_budget = budget;
    const int goes_on = st == t->host_cont; /* its burst goes on first */
    st->in_host_q = goes_on ? HQ_GOES_ON : HQ_QUEUED;
    fflow* fl = st->flow;
    const int front = goes_on && t->host_q.head;
    fhq_push(&t->host_q, st, offsetof(fstrand, host_link), front);
    fhq_push(&fl->host_q, st, offsetof(fstrand, flow_link), front);
    ++fl->host_queued;
    ++fl->depth;
}

/* Runs loop iterations with one reused body frame while they complete
 * trivially (no sub-steps, waits, errors or stack memory); anything else goes
 * through the general machinery. Returns R_STOP when the burst is used up. */
static int loop_run(fstrand* st, fstep* f, uint32_t* budget)
{
    fflow* fl = f->flow;
    fstep* c = step_get(fl);
    if (FTN_UNLIKELY(!c)) {
        strand_oom(st);
        return R_CONT;
    }
    int repeat = f->kind == FK_REPEAT;
    c->kind = repeat ? FK_REPEAT_BODY : FK_LOOP_BODY;
    c->parent = f;
    c->strand = st;
    c->data = f->data;
    for (;;) {
        if (repeat && f->u.loop.i >= f->u.loop.count) {
            st->top = f;
            step_put(fl->tool, c);
            step_complete(st, f);
            return R_CONT;
        }
        if (f->flags & F_FRESH) {
            /* the loop step took the turn: its first iteration runs in it,
             * as the C++ reference's loop step runs its body at once */
            f->flags &= (uint16_t)~F_FRESH;
        } else if (FTN_UNLIKELY(*budget == 0)) {
            st->top = f;
            step_put(fl->tool, c);
            strand_yield(st);
            return R_STOP;
        } else {
            --*budget;
        }
        if (FTN_UNLIKELY(!fargs_empty(&st->out_args))) {
            fargs_reset(&st->out_args); /* loop bodies take no arguments */
        }
        c->state = FS_EXEC;
        c->flags = 0;
        st->top = c;
        if (repeat) {
            c->u.iter = f->u.loop.i++;
            if (f->fn.repeat == fl->tool->host_repeat) {
                host_suspend(st, c, *budget, FS_EXEC);
                return R_STOP;
            }
            f->fn.repeat(&c->iface, c->data, c->u.iter);
        } else {
            if (f->fn.loop == fl->tool->host_loop) {
                host_suspend(st, c, *budget, FS_EXEC);
                return R_STOP;
            }
            f->fn.loop(&c->iface, c->data);
        }
        if (FTN_LIKELY((c->flags & ~F_SUCCESS) == 0 && !c->q_head && !c->allocs && !c->on_cancel
                       && !c->timer && !(fl->flags & (FL_CANCEL_REQ | FL_FREE_REQ)))) {
            continue;
        }
        post_exec(st, c);
        return R_CONT;
    }
}

/* `f` is in FS_SUB and its queue is empty: all its children are done. */
static int children_done(fstrand* st, fstep* f)
{
    switch (f->kind) {
    case FK_ROOT: {
        fflow* fl = f->flow;
        flow_finish(fl);
        if (fl->done) {
            fl->done(&fl->base.iface, fl->done_data);
        }
        return R_STOP;
    }
    case FK_BRANCH:
        return branch_done(st);
    case FK_SYNC:
        if (!(f->flags & F_LOCKED)) {
            f->flags |= F_LOCKED;
            if (!sync_protected(f)) {
                strand_oom(st);
                return R_CONT;
            }
            fargs_reset(&st->out_args);
            if (f->u.sync.saved) {
                st->out_args = *f->u.sync.saved;
                fargs_zero(f->u.sync.saved);
            }
            return R_CONT;
        }
        frame_pop(st, f);
        return R_CONT;
    default:
        frame_pop(st, f);
        return R_CONT;
    }
}

static int is_loop_match(fstep* f, const char* code, int* cont)
{
    if (code[0] != 'L' || strncmp(code, "Loop", 4) != 0) {
        return 0;
    }
    if (strcmp(code + 4, "Break") == 0) {
        *cont = 0;
    } else if (strcmp(code + 4, "Cont") == 0) {
        *cont = 1;
    } else {
        return 0;
    }
    const char* label = fflow_info(f->flow);
    return !label[0] || (f->u.loop.label && strcmp(label, f->u.loop.label) == 0);
}

static int eh_after(fstrand* st, fstep* f);

/* Handle one frame of error unwinding at the top of `st`. */
static int strand_unwind(fstrand* st, uint32_t budget)
{
    fstep* f = st->top;
    if (st->info_pending) {
        st->info_pending = 0;
        fflow_set_info(f->flow, st->pending_info.s);
    }
    fargs_reset(&st->out_args);
    if (f == st->base) {
        st->err_pending = 0;
        if (f->kind == FK_ROOT) {
            flow_fail(f->flow);
            return R_STOP;
        }
        return branch_fail(st);
    }
    if (f->kind == FK_PARALLEL && f->u.par.branches) {
        /* the branches' cancel handlers are told the error that unwinds
         * (futoin_steps_unwinding()), as when a sibling failed */
        fflow* fl = f->flow;
        fstrand* outer_cause = fl->cancel_cause;
        fl->cancel_cause = st;
        parallel_cancel_branches(f);
        fl->cancel_cause = outer_cause;
    }
    frame_stop_timer(f);
    FutoInAsyncSteps_cancel_callback cb = f->on_cancel;
    if (cb) {
        uint8_t state = f->state;
        f->on_cancel = NULL;
        f->state = FS_CANCEL;
        st->unwinding = 1;
        cb(&f->iface, f->cancel_data);
        st->unwinding = 0;
        f->state = state;
        if (f->flow->flags & (FL_CANCEL_REQ | FL_FREE_REQ)) {
            return R_CONT; /* cancelled meanwhile: no error handler runs */
        }
    }
    frame_unlock(f);

    int cont;
    if ((f->kind == FK_LOOP || f->kind == FK_REPEAT) && is_loop_match(f, strand_code(st), &cont)) {
        frame_drop_queue(f->flow->tool, f);
        st->err_pending = 0;
        /* a handled break/continue is no failure: like the JS reference,
         * it leaves no last_exception behind */
        futoin_reset_binval(&f->flow->last_exception);
        ++f->flow->err_gen;
        if (cont) {
            f->state = FS_SUB;
        } else {
            step_complete(st, f);
        }
        return R_CONT;
    }

    if (f->eh && !(f->flags & F_EH_USED)) {
        frame_drop_queue(f->flow->tool, f);
        f->flags = (uint16_t)((f->flags & (F_LOCKED | F_EXPOSED | F_TOLD)) | F_EH_USED);
        f->state = FS_EH;
        st->err_pending = 0;
        if (f->eh == f->flow->tool->host_eh) {
            host_suspend(st, f, budget, FS_EH);
            return R_STOP; /* host_done() goes on with eh_after() */
        }
        f->eh(&f->iface, f->data, strand_code(st));
        return eh_after(st, f);
    }
    frame_pop(st, f);
    return R_CONT;
}

/* what an error handler did: recovered, added steps, or the error goes on */
static int eh_after(fstrand* st, fstep* f)
{
    if ((f->flags & F_SUCCESS) && !(f->flags & F_ERROR)) {
        frame_pop(st, f);
    } else if (f->q_head && !(f->flags & F_ERROR)) {
        f->state = FS_SUB;
    } else {
        st->err_pending = 1;
        frame_pop(st, f);
    }
    return R_CONT;
}

static void strand_run_budget(fstrand* st, uint32_t budget);

static void strand_run_with(fstrand* st, uint32_t budget)
{
    if (st->fresh) {
        st->fresh = 0;
        if (st->flow->fresh_n) {
            --st->flow->fresh_n;
        }
    }
    strand_run_budget(st, budget);
}

/* the host's next step is one of fl's burst that goes on (a branch's first,
 * the step after the one just done), which no new branch may pass; with host
 * bursts, a step queued by an earlier event (a sibling resumed from outside)
 * waits behind the branches this event starts, as in the reference */
static int host_goes_on_in(const FutoInAsyncTool* t, const fflow* fl)
{
    const fstrand* head = t->host_q.head;
    return head && head->flow == fl && (head->in_host_q == HQ_GOES_ON || !t->host_bursts);
}

static void strand_run(void* data)
{
    fstrand* st = data;
    if (FTN_UNLIKELY(st->flow->taken)) {
        strand_schedule(st); /* the host is inside a step of its flow: after that */
        return;
    }
    if (FTN_UNLIKELY(st->fresh) && host_goes_on_in(st->flow->tool, st->flow)) {
        /* an earlier branch's step waits for the host: this one starts
         * after it (and after the branches of a parallel inside it), as the
         * reference runs each branch's first burst in turn */
        strand_schedule(st);
        return;
    }
    /* a step timeout's handlers run in the timer's turn, as the reference
     * runs them in its timer callback; the steps after them on a later one
     * (unless the host said the flow owns the burst: step_timeout_cb) */
    st->owed = 0; /* it goes on: an event still on its way for it finds nothing */
    st->after_eh = 0;
    FutoInAsyncTool* t = st->flow->tool;
    if (t->burst_takes && !st->handlers_only && !st->fresh) {
        /* an event of its own: it owns the burst (a branch's first burst is
         * its parallel's, as the reference runs it inside the parallel step) */
        t->burst_takes(t->owns_burst_ctx, &st->flow->base.iface, strand_key(st));
    }
    strand_run_with(st, st->handlers_only ? 0 : t->burst);
    strand_go_on(t, st);
}

static void strand_run_budget(fstrand* st, uint32_t budget)
{
    fflow* fl = st->flow;
    FutoInAsyncTool* t = fl->tool;
    ++fl->depth;
    for (;;) {
        if (FTN_UNLIKELY(fl->flags & (FL_CANCEL_REQ | FL_FREE_REQ))) {
            break;
        }
        int r;
        if (st->err_pending) {
            r = strand_unwind(st, budget);
        } else {
            fstep* f = st->top;
            if (f->state == FS_SUB) {
                fstep* c = f->q_head;
                if (!c) {
                    if (f->kind == FK_LOOP || f->kind == FK_REPEAT) {
                        r = loop_run(st, f, &budget);
                    } else if (FTN_UNLIKELY(budget == 0 && (f->kind == FK_BRANCH
                                                            || (f->kind == FK_SYNC && (f->flags & F_LOCKED))))) {
                        /* the release is a step of its own in the reference's
                         * Mutex, and so is the end of a branch (a root of its
                         * own there, whose last step tells its parallel): not
                         * in a burst of handlers only */
                        strand_yield(st);
                        break;
                    } else {
                        r = children_done(st, f);
                    }
                } else {
                    if (FTN_UNLIKELY(budget-- == 0)) {
                        strand_yield(st);
                        break;
                    }
                    f->q_head = c->next;
                    if (!f->q_head) {
                        f->q_tail = NULL;
                    }
                    c->next = NULL;
                    c->strand = st;
                    st->top = c;
                    if (FTN_LIKELY(c->kind == FK_STEP)) {
                        if (c->fn.exec == t->host_exec && t->host_exec) {
                            host_suspend(st, c, budget, FS_EXEC);
                            break;
                        }
                        /* the common case, kept lean: a plain step */
                        FutoInArgs* in = &t->in_args;
                        int has_args = !fargs_empty(&st->out_args);
                        if (has_args) {
                            *in = st->out_args;
                            fargs_zero(&st->out_args);
                            if (t->args_hook) {
                                t->args_hook(t->args_hook_ctx, in);
                            }
                        }
                        c->state = FS_EXEC;
                        c->fn.exec(&c->iface, c->data, in);
                        if (has_args) {
                            fargs_reset(in);
                        }
                        if (FTN_LIKELY((c->flags & ~F_SUCCESS) == 0 && !c->q_head && !c->allocs
                                       && !c->on_cancel && !c->timer)) {
                            st->top = f;
                            step_put(t, c);
                        } else {
                            post_exec(st, c);
                            if (FTN_UNLIKELY(st->handlers_only)) {
                                budget = 0; /* futoin_steps_defer_after() */
                            }
                        }
                        continue;
                    }
                    step_exec(st, c);
                    continue;
                }
            } else if ((f->state == FS_WAIT || f->state == FS_PAR) && (f->flags & F_SUCCESS)) {
                step_complete(st, f);
                continue;
            } else {
                st->handlers_only = 0; /* what ends the wait goes on from outside */
                break; /* waiting for an external event or branches */
            }
        }
        if (r != R_CONT) {
            break;
        }
    }
    if (--fl->depth == fl->host_queued && (fl->flags & (FL_CANCEL_REQ | FL_FREE_REQ))) {
        flow_deferred(fl);
    }
}

/* ---- entry points used by the API slots ---- */

int feng_in_callback(const fstep* s)
{
    return s->state == FS_EXEC || s->state == FS_EH;
}

/* told: the error came through the step's own pointer (its holder's
 * completion), not from its root or the engine */
static void feng_external_error(fstep* s, const char* code, const char* info, int told)
{
    fstrand* st = s->strand;
    if (!st || st->top != s || st->err_pending) {
        fprintf(stderr, "futoin: %s: %s on an inactive step (ignored)\n", code, info ? info : "");
        return;
    }
    if (s->state == FS_WAIT || s->state == FS_PAR) {
        if (s->flags & F_SUCCESS) {
            fprintf(stderr, "futoin: %s: %s after completion (ignored)\n", code, info ? info : "");
            return;
        }
        if (told) {
            s->flags |= F_TOLD;
        }
        strand_set_external_error(st, code, info);
        strand_schedule(st);
    } else {
        fprintf(stderr, "futoin: %s: %s on a step that is not waiting (ignored)\n", code,
                info ? info : "");
    }
}

int feng_wait_failing(FutoInAsyncSteps* bsi)
{
    fstep* s = fstep_of(bsi);
    return s->state == FS_WAIT && (s->strand->err_pending || s->strand->top != s);
}

void feng_misuse(fstep* s, const char* what)
{
    if (FTN_UNLIKELY(!ftool_is_loop_thread(s->flow->tool))) {
        /* the flow belongs to the loop thread: failing it from here would
         * touch its state unsynchronised */
        fprintf(stderr, "futoin: InternalError: %s from another thread (ignored)\n", what);
        return;
    }
    if (feng_in_callback(s)) {
        if (!(s->flags & F_ERROR)) {
            if (s->flags & F_SUCCESS) {
                s->flags &= ~F_SUCCESS;
                fargs_reset(&s->strand->out_args);
            }
            s->flags |= F_ERROR;
            strand_set_code(s->strand, FUTOIN_ERR_INTERNAL_ERROR);
            fflow_set_info(s->flow, what);
        }
        return;
    }
    if (s->state == FS_WAIT) {
        feng_external_error(s, FUTOIN_ERR_INTERNAL_ERROR, what, 0);
        return;
    }
    fprintf(stderr, "futoin: InternalError: %s (ignored)\n", what);
}

/* `slot` called on the interface of an outer step while a sub-step of its
 * sequence runs its callback: that sub-step fails with InternalError, as
 * the reference's sanity check throws from it. 1 when it did. */
int feng_outer_misuse(fstep* s, const char* slot)
{
    fstep* top = s->strand ? s->strand->top : NULL;
    if (!top || top == s || !feng_in_callback(top) || !ftool_is_loop_thread(s->flow->tool)) {
        return 0;
    }
    char what[80];
    snprintf(what, sizeof(what), "%s on an outer step while its sub-steps run", slot);
    feng_misuse(top, what);
    return 1;
}

fstep* feng_add(fstep* s, int kind, void* data)
{
    switch (s->state) {
    case FS_EXEC:
    case FS_EH:
        /* (the API slots refused a call from another thread already) */
        if (s->flags & F_SUCCESS) {
            feng_misuse(s, "add() after success()");
            return NULL;
        }
        if (s->flags & F_ERROR) {
            return NULL;
        }
        break;
    case FS_IDLE:
        break;
    case FS_QUEUED:
        if (s->kind != FK_PARALLEL) {
            if (feng_outer_misuse(s, kind == FK_PARALLEL ? "parallel()" : "add()")) {
                return NULL;
            }
            feng_misuse(s, "add() on a queued step");
            return NULL;
        }
        break;
    default:
        if (s->kind == FK_ROOT) {
            break;
        }
        if (feng_outer_misuse(s, kind == FK_PARALLEL ? "parallel()" : "add()")) {
            return NULL;
        }
        feng_misuse(s, s->state == FS_PAR    ? "add() on a parallel whose branches run"
                       : s->state == FS_WAIT ? "add() on a step that waits"
                                             : "add() on a completed step");
        return NULL;
    }
    fstep* c = enqueue_child(s, kind);
    if (FTN_UNLIKELY(!c)) {
        feng_misuse(s, "out of memory");
        return NULL;
    }
    c->data = data;
    return c;
}

void feng_success(fstep* s, FutoInArgs* args)
{
    switch (s->state) {
    case FS_EXEC:
    case FS_EH:
        if (s->flags & (F_SUCCESS | F_ERROR)) {
            if (args) {
                fargs_reset(args);
            }
            const char* what = (s->flags & F_ERROR) ? "success() after handle_error()"
                                                    : "success() called twice";
            s->flags &= ~F_ERROR;
            feng_misuse(s, what);
            return;
        }
        if (s->q_head) {
            if (args) {
                fargs_reset(args);
            }
            feng_misuse(s, "Invalid success() call");
            return;
        }
        break;
    case FS_WAIT: {
        fstrand* st = s->strand;
        if ((s->flags & F_SUCCESS) || st->err_pending || st->top != s) {
            if (args) {
                fargs_reset(args);
            }
            fprintf(stderr, "futoin: InternalError: %s (ignored)\n",
                    (s->flags & F_SUCCESS) ? "success() called twice"
                                           : "success() after the step already failed");
            return;
        }
        st->owed = ftool_ticket(st->flow->tool); /* a completion from outside: the host's event for it */
        s->flags |= F_TOLD;
        strand_schedule(st);
        break;
    }
    default:
        if (args) {
            fargs_reset(args);
        }
        if (feng_outer_misuse(s, "success()")) {
            return;
        }
        fprintf(stderr, "futoin: InternalError: success() on an inactive step (ignored)\n");
        return;
    }
    s->flags |= F_SUCCESS;
    if (args) {
        fstrand* st = s->strand;
        fargs_reset(&st->out_args);
        st->out_args = *args;
        fargs_zero(args);
    }
}

void feng_error(fstep* s, const char* code, const char* info)
{
    if (feng_in_callback(s)) {
        if (s->flags & (F_ERROR | F_SUCCESS)) {
            const char* what = (s->flags & F_ERROR) ? "handle_error() called twice"
                                                    : "handle_error() after success()";
            s->flags &= ~F_ERROR;
            feng_misuse(s, what);
            return;
        }
        s->flags |= F_ERROR;
        strand_set_code(s->strand, code);
        fflow_set_info(s->flow, info);
        return;
    }
    if (feng_outer_misuse(s, "handle_error()")) {
        return;
    }
    feng_external_error(s, code, info, 1);
}

static void step_timeout_cb(void* data);

int feng_event_waits(void (*cb)(void*), void* data)
{
    if (cb == strand_run) {
        return ((fstrand*)data)->flow->taken != 0;
    }
    return cb == step_timeout_cb && ((fstep*)data)->flow->taken != 0;
}

fflow* feng_event_flow(void (*cb)(void*), void* data, uint32_t* gen)
{
    if (cb != strand_run) {
        return NULL;
    }
    fflow* fl = ((fstrand*)data)->flow;
    *gen = fl->base.gen;
    return fl;
}

void feng_event_after(fflow* fl, uint32_t gen)
{
    /* as host_done() does after a step: a parallel the turn reached runs
     * its branches in this event, as the reference runs them inside the
     * parallel step */
    if (!fl->taken) {
        run_fresh_branches(fl, gen);
    }
}

static void step_timeout_cb(void* data)
{
    fstep* s = data;
    s->timer = NULL;
    fstrand* st = s->strand;
    if (st->err_pending) {
        /* another error is unwinding first; if it is handled below this
         * step, the deadline still stands: try again on the next turn */
        ftimer* tm = ftool_timer_start(s->flow->tool, 0, step_timeout_cb, s);
        if (tm) {
            s->timer = tm;
            s->timer_gen = fgen_get(&tm->gen);
        }
        return;
    }
    fstep* top = st->top;
    if (top == s && top->state == FS_WAIT && (top->flags & F_SUCCESS)) {
        return; /* the timed step completed just before: the completion wins */
    }
    if (frames_ended_to(st, s)) {
        return; /* so did a sub-step that was all it had left */
    }
    strand_set_external_error(st, FUTOIN_ERR_TIMEOUT, "");
    FutoInAsyncTool* t = s->flow->tool;
    fflow* fl = s->flow;
    /* the flow that owns the burst goes on after its handlers in this event */
    st->handlers_only = !(t->owns_burst && t->owns_burst(t->owns_burst_ctx, &fl->base.iface, strand_key(st)));
    ftool_task_push_urgent(t, &st->task); /* its handlers are the timer's event */
}

void feng_set_timeout(fstep* s, uint32_t ms)
{
    FutoInAsyncTool* t = s->flow->tool;
    frame_stop_timer(s);
    s->flags |= F_WAIT;
    ftimer* tm = ftool_timer_start(t, ms, step_timeout_cb, s);
    if (!tm) {
        feng_misuse(s, "out of memory");
        return;
    }
    s->timer = tm;
    s->timer_gen = fgen_get(&tm->gen);
}

void feng_execute(fflow* fl, void* data, FutoInAsyncSteps_error_callback eh)
{
    if (fl->flags & FL_RUNNING) {
        if (eh) {
            /* it reads why in error_info, which is the running flow's own
             * again afterwards (the other half of the double buffer) */
            const uint8_t own = fl->info_idx;
            fflow_set_info(fl, "execute() called twice");
            eh(&fl->base.iface, data, FUTOIN_ERR_INTERNAL_ERROR);
            fl->info_idx = own;
        } else {
            fprintf(stderr, "futoin: InternalError: execute() called twice (ignored)\n");
        }
        return;
    }
    fl->unhandled = eh;
    fl->unhandled_data = data;
    fl->flags |= FL_RUNNING;
    fl->main.err_crossed = 0; /* what the last run's unhandled error kept */
    fl->base.state = FS_SUB;
    fl->main.top = &fl->base;
    fl->main.err_pending = 0;
    strand_schedule(&fl->main);
}

void feng_cancel(fflow* fl)
{
    if (!(fl->flags & FL_RUNNING)) {
        return;
    }
    if (flow_in_callback(fl)) {
        fl->flags |= FL_CANCEL_REQ;
        return;
    }
    flow_cancel_now(fl);
    if (fl->flags & FL_FREE_REQ) {
        /* a cancel handler freed the root meanwhile */
        fl->flags &= ~FL_FREE_REQ;
        feng_flow_free(fl);
    }
}

static fflow* flow_alloc(FutoInAsyncTool* t)
{
    fflow* fl = ftn_calloc(sizeof(*fl));
    if (fl) {
        *(const FutoInAsyncStepsAPI**)&fl->base.iface.api = &ftn_steps_api;
        fl->tool = t;
    }
    return fl;
}

static void flow_init(fflow* fl, ptrdiff_t id);

fflow* feng_flow_new(FutoInAsyncTool* t)
{
    fflow* fl = t->free_flows;
    if (fl) {
        t->free_flows = fl->next_free;
    } else if (!(fl = flow_alloc(t))) {
        return NULL;
    }
    flow_init(fl, (ptrdiff_t)ftool_root_id(t));
    ftool_hold(t);
    return fl;
}

/* on another thread: memory of its own and an id and a hold that touch
 * nothing the loop thread changes; freed (on the loop thread) into the
 * tool's pool as any root */
fflow* feng_flow_new_remote(FutoInAsyncTool* t)
{
    fflow* fl = flow_alloc(t);
    if (!fl) {
        return NULL;
    }
    flow_init(fl, (ptrdiff_t)ftool_root_id_remote());
    fl->flags = FL_REMOTE;
    atomic_fetch_add_explicit(&t->remote_live, 1, memory_order_relaxed);
    return fl;
}

static void flow_init(fflow* fl, ptrdiff_t id)
{
    fl->next_free = NULL;
    ++fl->base.gen;
    fl->base.kind = FK_ROOT;
    fl->base.state = FS_IDLE;
    fl->base.flow = fl;
    fl->base.parent = NULL;
    fl->unhandled = NULL;
    fl->unhandled_data = NULL;
    fl->done = NULL;
    fl->done_data = NULL;
    fl->cancelled = NULL;
    fl->cancelled_data = NULL;
    fl->host_data = NULL;
    fl->flags = 0;
    fl->depth = 0;
    fl->taken = 0;
    fl->host_queued = 0;
    fl->host_q.head = fl->host_q.tail = NULL;
    fl->fresh_n = 0;
    fl->par_failed = 0;
    fl->le_seen_type = NULL;
    fl->le_seen_p = NULL;
    fl->le_fresh = 0;
    strand_init_id(&fl->main, fl, &fl->base, id);
}

void feng_flow_free(fflow* fl)
{
    if (flow_in_callback(fl)) {
        fl->flags |= FL_FREE_REQ | FL_CANCEL_REQ;
        return;
    }
    if (fl->flags & FL_RUNNING) {
        flow_cancel_now(fl);
    }
    FutoInAsyncTool* t = fl->tool;
    ++fl->depth; /* cleanups below are user code */
    /* gone for them already: a call on this root is refused, not queued
     * into the next root made from this memory */
    fl->base.state = FS_FREE;
    frame_drop_queue(t, &fl->base);
    fstep_free_allocs(&fl->base);
    fflow_vars_free(fl);
    futoin_reset_binval(&fl->last_exception);
    fargs_reset(&fl->main.out_args);
    --fl->depth;
    if (t->owner_cont && t->owner_cont->flow == fl) {
        t->owner_cont = NULL;
    }
    ftool_defer_unlink(t, fl);
    fl->next_free = t->free_flows;
    t->free_flows = fl;
    /* the last of a freed tool's: it goes now */
    if (fl->flags & FL_REMOTE) {
        fl->flags &= ~FL_REMOTE;
        ftool_drop_remote(t);
    } else {
        ftool_drop(t);
    }
}

static void strand_free_bufs(fstrand* st)
{
    fbuf_free(&st->code[0]);
    fbuf_free(&st->code[1]);
    fbuf_free(&st->pending_info);
}

void feng_tool_release(FutoInAsyncTool* t)
{
    for (fflow* fl = t->free_flows; fl;) {
        fflow* next = fl->next_free;
        strand_free_bufs(&fl->main);
        fbuf_free(&fl->info[0]);
        fbuf_free(&fl->info[1]);
        fbuf_free(&fl->le_code);
        ftn_free(fl);
        fl = next;
    }
    t->free_flows = NULL;
    for (fstrand* st = t->strand_pool.free_list; st; st = st->sib_next) {
        strand_free_bufs(st);
    }
}

void* feng_host_data(fstep* s)
{
    memset(&s->u, 0, sizeof(s->u));
    return &s->u;
}

void futoin_tool_set_host_cleanup(FutoInAsyncTool* t, void (*cleanup)(void* data))
{
    if (t) {
        t->host_cleanup = cleanup;
    }
}

void futoin_tool_set_args_hook(FutoInAsyncTool* t, void (*hook)(void* ctx, FutoInArgs* args), void* ctx)
{
    if (t) {
        t->args_hook = hook;
        t->args_hook_ctx = ctx;
    }
}

void futoin_tool_set_host_exec(FutoInAsyncTool* t, FutoInAsyncSteps_execute_callback f)
{
    if (t) {
        t->host_exec = f;
    }
}

void futoin_tool_set_host_loops(
        FutoInAsyncTool* t,
        void (*loop)(FutoInAsyncSteps* bsi, void* data),
        void (*repeat)(FutoInAsyncSteps* bsi, void* data, size_t i))
{
    if (t) {
        t->host_loop = loop;
        t->host_repeat = repeat;
    }
}

void futoin_tool_set_host_bursts(FutoInAsyncTool* t, int on)
{
    if (t) {
        t->host_bursts = on != 0;
    }
}

void futoin_tool_set_burst_owner(FutoInAsyncTool* t, void (*takes)(void* ctx, FutoInAsyncSteps* root, uint32_t branch),
        int (*owns)(void* ctx, FutoInAsyncSteps* root, uint32_t branch), void* ctx)
{
    if (t) {
        t->burst_takes = takes;
        t->owns_burst = owns;
        t->owns_burst_ctx = ctx;
    }
}

/* the strand of a live step of ours (not a root), or NULL */
static const fstrand* strand_of_step(FutoInAsyncSteps* bsi)
{
    if (!bsi || !futoin_steps_is_native(bsi)) {
        return NULL;
    }
    const fstep* s = fstep_of(bsi);
    return s->kind != FK_ROOT && s->state != FS_FREE ? s->strand : NULL;
}

uint32_t futoin_steps_branch_key(FutoInAsyncSteps* bsi)
{
    const fstrand* st = strand_of_step(bsi);
    return st ? strand_key(st) : 0;
}

void futoin_tool_set_host_error(FutoInAsyncTool* t, FutoInAsyncSteps_error_callback eh)
{
    if (t) {
        t->host_eh = eh;
    }
}

const char* futoin_steps_unwinding(FutoInAsyncSteps* bsi)
{
    if (!bsi || !futoin_steps_is_native(bsi)) {
        return NULL;
    }
    fstep* c = fstep_of(bsi);
    if (c->state != FS_CANCEL || !c->strand) {
        return NULL;
    }
    if (c->strand->unwinding && c->strand->top == c) {
        return strand_code(c->strand);
    }
    fstrand* cause = c->flow->cancel_cause;
    return cause ? strand_code(cause) : NULL;
}

const char* futoin_tool_host_error(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return NULL;
    }
    fstep* c = fstep_of(bsi);
    if (c->state != FS_EH || !c->strand || c->strand->top != c) {
        return NULL;
    }
    return strand_code(c->strand);
}

/* the plain step bsi the host took and runs now, else NULL */
/* a step the host runs now: a plain step (`plain`), or a loop body too */
static fstep* host_running_step(FutoInAsyncSteps* bsi, int plain)
{
    if (!futoin_steps_is_native(bsi)) {
        return NULL;
    }
    fstep* c = fstep_of(bsi);
    if (!c->strand || c->strand->top != c || c->state != FS_EXEC
            || !(c->kind == FK_STEP || (!plain && (c->kind == FK_LOOP_BODY || c->kind == FK_REPEAT_BODY)))) {
        return NULL;
    }
    return c;
}

uint32_t futoin_tool_host_budget(FutoInAsyncSteps* bsi)
{
    fstep* c = host_running_step(bsi, 0);
    return c ? c->strand->host_budget : 0;
}

void futoin_tool_host_spend(FutoInAsyncSteps* bsi, uint32_t steps)
{
    fstep* c = host_running_step(bsi, 0);
    if (c) {
        fstrand* st = c->strand;
        st->host_budget = steps < st->host_budget ? st->host_budget - steps : 0;
    }
}

uint32_t futoin_tool_host_loop_room(FutoInAsyncSteps* bsi)
{
    fstep* c = host_running_step(bsi, 0);
    if (!c || c->kind == FK_STEP) {
        return 0;
    }
    uint32_t room = c->strand->host_budget;
    if (c->kind == FK_REPEAT_BODY) {
        const fstep* f = c->parent; /* its counter is past c already */
        size_t left = f->u.loop.count - f->u.loop.i;
        if (left < room) {
            room = (uint32_t)left;
        }
    }
    return room;
}

void futoin_tool_host_loop_ran(FutoInAsyncSteps* bsi, uint32_t k)
{
    uint32_t room = futoin_tool_host_loop_room(bsi);
    if (k > room) {
        k = room;
    }
    if (k == 0) {
        return;
    }
    fstep* c = fstep_of(bsi);
    c->strand->host_budget -= k;
    if (c->kind == FK_REPEAT_BODY) {
        c->parent->u.loop.i += k;
        c->u.iter += k;
    }
}

void* futoin_tool_host_follow(FutoInAsyncSteps* bsi)
{
    fstep* c = host_running_step(bsi, 1);
    fstep* p = c ? c->parent : NULL;
    if (!p) {
        return NULL;
    }
    fstep* n = step_get(c->flow);
    if (FTN_UNLIKELY(!n)) {
        return NULL;
    }
    /* c left p's queue when it started: the head is what comes after it */
    n->kind = FK_STEP;
    n->state = FS_QUEUED;
    n->parent = p;
    n->data = feng_host_data(n);
    n->fn.exec = c->fn.exec;
    n->eh = NULL;
    n->next = p->q_head;
    p->q_head = n;
    if (!p->q_tail) {
        p->q_tail = n;
    }
    return n->data;
}

int futoin_tool_host_kind(FutoInAsyncSteps* bsi, size_t* iter)
{
    if (!futoin_steps_is_native(bsi)) {
        return -1;
    }
    fstep* c = fstep_of(bsi);
    if (!c->strand || c->strand->top != c) {
        return -1;
    }
    if (c->state == FS_EH) {
        return FUTOIN_HOST_ERROR;
    }
    if (c->state != FS_EXEC) {
        return -1;
    }
    switch (c->kind) {
    case FK_STEP:
        return FUTOIN_HOST_STEP;
    case FK_LOOP_BODY:
        return FUTOIN_HOST_LOOP;
    case FK_REPEAT_BODY:
        if (iter) {
            *iter = c->u.iter;
        }
        return FUTOIN_HOST_REPEAT;
    default:
        return -1;
    }
}

int futoin_tool_host_pending(FutoInAsyncTool* t)
{
    return t && t->host_q.head;
}

/* the host takes st's step */
static FutoInAsyncSteps* host_take(FutoInAsyncTool* t, fstrand* st, void** data, const FutoInArgs** args)
{
    host_unlink(t, st);
    ++t->host_active;
    ++st->flow->taken;
    fstep* c = st->top;
    if (data) {
        *data = c->data;
    }
    if (args) {
        *args = &st->host_args;
    }
    return &c->iface;
}

FutoInAsyncSteps* futoin_tool_host_next(FutoInAsyncTool* t, void** data, const FutoInArgs** args)
{
    fstrand* st = t && !t->dying ? t->host_q.head : NULL;
    while (FTN_UNLIKELY(st && st->flow->taken)) {
        st = st->host_link.next; /* one step of a flow at a time, as the engine calls them */
    }
    return st ? host_take(t, st, data, args) : NULL;
}

/* the flow of a live root of this engine to run, or NULL (also when its
 * tool was freed: a dying tool runs nothing) */
static fflow* flow_of_root(FutoInAsyncSteps* root)
{
    if (!root || !futoin_steps_is_native(root)) {
        return NULL;
    }
    fstep* s = fstep_of(root);
    return s->kind == FK_ROOT && s->state != FS_FREE && !s->flow->tool->dying ? s->flow : NULL;
}

/* the strand of fl nearest the tail of the tool's queue that match()
 * takes (nearest the head: `oldest`), or NULL. The queue holds other flows'
 * strands too, any number of them (flows started in one go wait there for a
 * turn), and a failed branch's parent goes to its front: fl's are looked for
 * from both ends at once, up to the last of them (fl->queued_n) */
static fstrand* queued_strand_of(fflow* fl, int (*match)(const fstrand*, uint32_t), uint32_t arg, int oldest)
{
    uint32_t mine = fl->queued_n;
    ftask* near = oldest ? fl->tool->q_head : fl->tool->q_tail; /* its match wins at once */
    ftask* far = oldest ? fl->tool->q_tail : fl->tool->q_head;
    fstrand* far_hit = NULL; /* the far side's match nearest the near end */
    while (mine && near) {
        fstrand* b = near->data;
        if (near->cb == strand_run && b->flow == fl) {
            if (match(b, arg)) {
                return b; /* nearer than all the far side saw */
            }
            --mine;
        }
        if (near == far || !mine) {
            break;
        }
        near = oldest ? near->next : near->prev;
        b = far->data;
        if (far->cb == strand_run && b->flow == fl) {
            if (match(b, arg)) {
                far_hit = b;
            }
            --mine;
        }
        if (far == near) {
            break;
        }
        far = oldest ? far->prev : far->next;
    }
    return far_hit;
}

static int strand_is_fresh(const fstrand* b, uint32_t arg)
{
    (void)arg;
    return b->fresh;
}

static int strand_has_error(const fstrand* b, uint32_t arg)
{
    (void)arg;
    return b->err_pending;
}

static int strand_owes(const fstrand* b, uint32_t ticket)
{
    return b->owed == ticket;
}

/* the strand of key that the handlers of an error from outside just left
 * queued, with no event on its way to it */
static int strand_keyed(const fstrand* b, uint32_t key)
{
    return strand_key(b) == key && b->after_eh && !b->owed;
}

/* the first burst of the next branch of fl that parallel_start() made and
 * nothing ran yet: a nested run of a flow runs its new branches at once, as
 * the reference runs them inside the parallel step: in order, and the
 * branches of a parallel step inside one of them before its later siblings
 * (the newest parallel step first). Returns 0 when there is none (or the
 * tool is inside its own callbacks). */
static int run_fresh_branch(fflow* fl)
{
    FutoInAsyncTool* t = fl->tool;
    if (!fl->fresh_n || t->running || !ftool_is_loop_thread(t)) {
        return 0;
    }
    /* fresh strands are queued once, when made: the last one queued is the newest */
    fstrand* newest = queued_strand_of(fl, strand_is_fresh, 0, 0);
    if (!newest) {
        fl->fresh_n = 0; /* the rest were released before they ran */
        return 0;
    }
    fstrand* b = newest->par->u.par.branches;
    while (!b->fresh || !b->task.queued) {
        b = b->sib_next; /* ends at `newest` at the latest */
    }
    ftool_task_remove(t, &b->task);
    fstrand* prev_cont = t->host_cont;
    t->host_cont = t->host_bursts ? b : NULL; /* its first host step goes first */
    t->running = 1;
    strand_run(b);
    t->running = 0;
    t->host_cont = prev_cont;
    ftool_rearm(t);
    return 1;
}

/* the first bursts of the branches fl started (while its run since `gen`
 * lasts), until one leaves a step to the host: the host runs that one next */
static void run_fresh_branches(fflow* fl, uint32_t gen)
{
    FutoInAsyncTool* t = fl->tool;
    uint32_t fresh_left = t->burst; /* an endless chain of them cannot hold the call */
    while (fresh_left-- && fl->base.gen == gen && fl->fresh_n && !host_goes_on_in(t, fl) && run_fresh_branch(fl)) {
    }
}

FutoInAsyncSteps* futoin_tool_host_next_of(FutoInAsyncSteps* root, void** data, const FutoInArgs** args)
{
    fflow* fl = flow_of_root(root);
    if (!fl || fl->taken) {
        return NULL; /* the host is inside a step of it: the rest waits for that host_done() */
    }
    FutoInAsyncTool* t = fl->tool;
    uint32_t fresh_left = t->burst; /* an endless chain of new branches cannot hold the call */
    do {
        if (fl->host_q.head) {
            return host_take(t, fl->host_q.head, data, args);
        }
    } while (fresh_left-- && run_fresh_branch(fl));
    return NULL;
}

int futoin_tool_host_peek_of(FutoInAsyncSteps* root)
{
    fflow* fl = flow_of_root(root);
    if (!fl || !fl->host_q.head) {
        return -1;
    }
    return futoin_tool_host_kind(&fl->host_q.head->top->iface, NULL);
}

static void host_done(FutoInAsyncSteps* bsi, int errors_only);
static int unwind_queued(fflow* fl, int host_first);

void futoin_tool_host_done(FutoInAsyncSteps* bsi)
{
    host_done(bsi, 0);
}

void futoin_tool_host_done_unwinding(FutoInAsyncSteps* bsi)
{
    host_done(bsi, 1);
}

static void host_done(FutoInAsyncSteps* bsi, int errors_only)
{
    if (!futoin_steps_is_native(bsi)) {
        return;
    }
    fstep* c = fstep_of(bsi);
    fstrand* st = c->strand;
    /* a step queued for the host is in its callback's state too (a loop's
     * next iteration reuses the body done just before): not taken */
    if (!st || (c->state != FS_EXEC && c->state != FS_EH) || st->top != c || st->in_host_q || !st->flow->taken) {
        fprintf(stderr, "futoin: InternalError: futoin_tool_host_done(): not a step taken with "
                        "futoin_tool_host_next() (ignored)\n");
        return;
    }
    fflow* fl = st->flow;
    FutoInAsyncTool* t = fl->tool;
    --t->host_active;
    --fl->taken;
    if (t->dying) {
        /* runs nothing: the step stays until its root is freed, which a
         * free() during the step left to now */
        fargs_reset(&st->host_args);
        if (--fl->depth == fl->host_queued && (fl->flags & FL_FREE_REQ)) {
            flow_deferred(fl);
        }
        return;
    }
    int was_running = t->running;
    t->running = 1;
    fargs_reset(&st->host_args); /* as after any execute callback */
    if (c->state == FS_EH) {
        eh_after(st, c);
    } else if (FTN_LIKELY((c->flags & ~F_SUCCESS) == 0 && !c->q_head && !c->allocs && !c->on_cancel && !c->timer
                   && (c->kind == FK_STEP || !(fl->flags & (FL_CANCEL_REQ | FL_FREE_REQ))))) {
        /* a body that only ran goes back to its loop, which takes the next
         * iteration, as loop_run() does */
        st->top = c->parent;
        step_put(t, c);
    } else {
        post_exec(st, c);
    }
    --fl->depth;
    fstrand* prev_cont = t->host_cont;
    t->host_cont = t->host_bursts ? st : NULL;
    const uint32_t gen = fl->base.gen;
    const uint32_t par_failed = fl->par_failed;
    /* unwinding: a burst of 0 runs the outer handlers and stops before the
     * next step */
    const int prev_eh_run = t->eh_run;
    t->eh_run = errors_only;
    strand_run_budget(st, errors_only || st->handlers_only ? 0 : st->host_budget);
    t->eh_run = prev_eh_run;
    strand_go_on(t, st);
    if (fl->par_failed != par_failed && fl->base.gen == gen) {
        /* the step failed a parallel: its handlers now, the first host one
         * ahead of the host's queue (siblings resumed meanwhile wait) */
        unwind_queued(fl, 1);
    }
    t->host_cont = prev_cont;
    t->running = was_running;
    if (!was_running) {
        /* branches the flow started now run their first bursts before
         * anything else, as the reference runs them inside the parallel
         * step: one at a time, each until it leaves a step to the host */
        run_fresh_branches(fl, gen);
        ftool_rearm(t);
    }
}

static int execute_burst(FutoInAsyncSteps* root, int inside_host_step);

int futoin_steps_execute_burst(FutoInAsyncSteps* root)
{
    return execute_burst(root, 0);
}

/* the flow of a root of ours, or NULL reported (the hooks are ignored) */
static fflow* hook_flow(FutoInAsyncSteps* root, const char* what)
{
    if (!futoin_steps_is_native(root) || fstep_of(root)->kind != FK_ROOT) {
        fprintf(stderr, "futoin: InternalError: %s(): not a root of this library (ignored)\n", what);
        return NULL;
    }
    return fstep_of(root)->flow;
}

void futoin_steps_set_cancelled(FutoInAsyncSteps* root, void (*cancelled)(FutoInAsyncSteps* root, void* data),
                                void* data)
{
    fflow* fl = hook_flow(root, "futoin_steps_set_cancelled");
    if (fl) {
        fl->cancelled = cancelled;
        fl->cancelled_data = data;
    }
}

void futoin_steps_set_done(FutoInAsyncSteps* root, void (*done)(FutoInAsyncSteps* root, void* data), void* data)
{
    fflow* fl = hook_flow(root, "futoin_steps_set_done");
    if (fl) {
        fl->done = done;
        fl->done_data = data;
    }
}

void futoin_steps_set_host_data(FutoInAsyncSteps* root, void* data)
{
    fflow* fl = hook_flow(root, "futoin_steps_set_host_data");
    if (fl) {
        fl->host_data = data;
    }
}

void* futoin_steps_host_data(FutoInAsyncSteps* bsi)
{
    return futoin_steps_is_native(bsi) ? fstep_of(bsi)->flow->host_data : NULL;
}

int futoin_steps_execute_nested(FutoInAsyncSteps* root)
{
    return execute_burst(root, 1);
}

/* the newest strand of fl queued with an error to unwind, or NULL (errors
 * from outside are queued last, failed branches' parents first) */
static fstrand* queued_error_of(fflow* fl)
{
    return queued_strand_of(fl, strand_has_error, 0, 0);
}

/* the strands of fl that wait with an error to unwind run their handlers,
 * newest first (host_first: each one's first host step ahead of the host's
 * queue); 1 when one ran */
static int unwind_queued(fflow* fl, int host_first)
{
    FutoInAsyncTool* t = fl->tool;
    const uint32_t gen = fl->base.gen;
    uint32_t left = t->burst; /* bounded, as any burst */
    int ran = 0;
    fstrand* st;
    const int was_running = t->running;
    fstrand* prev_cont = t->host_cont;
    while (left-- && fl->base.gen == gen && (fl->flags & FL_RUNNING) && !fl->taken && (st = queued_error_of(fl))) {
        ftool_task_remove(t, &st->task);
        t->running = 1;
        t->host_cont = host_first && t->host_bursts ? st : prev_cont;
        st->owed = 0; /* it goes on here: what it left is claimed anew */
        const int prev_eh_run = t->eh_run;
        t->eh_run = 1;
        strand_run_with(st, 0); /* handlers only: a burst of 0 stops before the next step */
        t->eh_run = prev_eh_run;
        ran = 1;
    }
    t->host_cont = prev_cont;
    t->running = was_running;
    return ran;
}

int futoin_steps_unwind_now(FutoInAsyncSteps* root)
{
    fflow* fl = flow_of_root(root);
    /* as execute_burst(), inside a host step: never inside the tool's own callbacks */
    if (!fl || fl->tool->running || !ftool_is_loop_thread(fl->tool)) {
        return 0;
    }
    const int ran = unwind_queued(fl, 0);
    if (ran) {
        ftool_rearm(fl->tool);
    }
    return ran;
}

int futoin_steps_parallel_failed(FutoInAsyncSteps* root)
{
    fflow* fl = flow_of_root(root);
    if (!fl || !fl->par_failed) {
        return 0;
    }
    fl->par_failed = 0;
    return 1;
}

/* fl's main sequence holds only steps that completed: its innermost step
 * by a success() from outside, every step around it with nothing queued
 * (the next turn only pops them) */
static int main_completed(const fflow* fl)
{
    const fstrand* st = &fl->main;
    const fstep* s = st->top;
    if (!s || s == &fl->base || st->err_pending || !(s->flags & F_SUCCESS) ||
        (s->state != FS_WAIT && s->state != FS_PAR) || s->q_head) {
        return 0;
    }
    for (const fstep* p = s->parent; p != &fl->base; p = p->parent) {
        if (!p || p->kind != FK_STEP || p->state != FS_SUB || p->q_head) {
            return 0;
        }
    }
    return 1;
}

static int main_all_done(fflow* fl)
{
    return main_completed(fl) && fl->base.q_head == NULL;
}

int futoin_steps_at_top(FutoInAsyncSteps* root)
{
    fflow* fl = flow_of_root(root);
    if (!fl || !(fl->flags & FL_RUNNING) || fl->main.err_pending) {
        return 0;
    }
    const fstep* top = fl->main.top;
    /* a root-level step waiting for the host to take it has not begun */
    return top == &fl->base || (top->parent == &fl->base && fl->main.in_host_q && top->state == FS_EXEC) ||
           main_completed(fl);
}

int futoin_steps_goes_on_later(FutoInAsyncSteps* root)
{
    const fflow* fl = flow_of_root(root);
    /* depth beyond the strands on the host queue: a callback runs */
    return fl && (fl->flags & FL_RUNNING) && !fl->main.err_pending &&
           (fl->main.task.queued || fl->main.in_host_q) && fl->depth == fl->host_queued;
}

int futoin_steps_finish_done(FutoInAsyncSteps* root)
{
    fflow* fl = flow_of_root(root);
    if (!fl || !(fl->flags & FL_RUNNING) || fl->tool->running || fl->taken || !ftool_is_loop_thread(fl->tool) ||
        !fl->main.task.queued || !main_all_done(fl)) {
        return 0;
    }
    FutoInAsyncTool* t = fl->tool;
    const uint32_t gen = fl->base.gen; /* the done hook may free root */
    ftool_task_remove(t, &fl->main.task);
    t->running = 1;
    strand_run_with(&fl->main, 0); /* pops the completed steps: no step runs */
    t->running = 0;
    ftool_rearm(t);
    return fl->base.gen != gen || !(fl->flags & FL_RUNNING);
}

int futoin_steps_fail_waiting(FutoInAsyncSteps* at, const char* code, const char* info)
{
    if (!futoin_steps_is_native(at)) {
        return 0;
    }
    const fstep* a = fstep_of(at);
    fflow* fl = a->kind == FK_ROOT ? flow_of_root(at) : a->state == FS_SUB ? a->flow : NULL;
    if (!fl || fl->tool->dying || !(fl->flags & FL_RUNNING) || !ftool_is_loop_thread(fl->tool)) {
        return 0;
    }
    /* a step's sequence may be a parallel branch's */
    fstrand* st = a->kind == FK_ROOT ? &fl->main : a->strand;
    fstep* s = st->top;
    if (!s || s == st->base || (s->state != FS_WAIT && s->state != FS_PAR) || (s->flags & F_SUCCESS) ||
        st->err_pending) {
        return 0;
    }
    feng_external_error(s, code ? code : FUTOIN_ERR_INTERNAL_ERROR, info, 0);
    return 1;
}

/* strand st of flow fl goes on now if it is queued to. inside_host_step:
 * the host may be running a step it took (no engine frame is on the stack
 * then) */
static int strand_burst(fflow* fl, fstrand* st, int inside_host_step)
{
    FutoInAsyncTool* t = fl->tool;
    /* never inside the tool's own callbacks: that would run a flow inline */
    if (t->running || (t->host_active && !inside_host_step) || fl->taken || !ftool_is_loop_thread(t)
            || !(fl->flags & FL_RUNNING) || !st->task.queued) {
        return 0;
    }
    ftool_task_remove(t, &st->task);
    t->running = 1;
    strand_run(st);
    t->running = 0;
    ftool_rearm(t);
    return 1;
}

static int execute_burst(FutoInAsyncSteps* root, int inside_host_step)
{
    fflow* fl = flow_of_root(root);
    return fl ? strand_burst(fl, &fl->main, inside_host_step) : 0;
}

int futoin_steps_take_error_crossed(FutoInAsyncSteps* step)
{
    if (!step || !futoin_steps_is_native(step)) {
        return 0;
    }
    fstep* s = fstep_of(step);
    fflow* fl = s->flow;
    /* a sibling's cancel handler: the failed branch's parallel tells */
    fstrand* st = fl->cancel_cause ? fl->cancel_cause : s->kind == FK_ROOT ? &fl->main : s->strand;
    if (!st || !st->err_crossed) {
        return 0;
    }
    st->err_crossed = 0;
    return 1;
}

/* the burst of fl's strand nearest the head of the queue that match() takes */
static int execute_queued(fflow* fl, int (*match)(const fstrand*, uint32_t), uint32_t arg)
{
    fstrand* b = fl ? queued_strand_of(fl, match, arg, 1) : NULL;
    return b ? strand_burst(fl, b, 1) : 0;
}

int futoin_steps_execute_owed(FutoInAsyncSteps* root, uint32_t ticket)
{
    return ticket ? execute_queued(flow_of_root(root), strand_owes, ticket) : 0;
}

int futoin_steps_execute_key(FutoInAsyncSteps* root, uint32_t key)
{
    return execute_queued(flow_of_root(root), strand_keyed, key);
}

/* the ticket given to fl's queued strands that had none (claim), or 1 when
 * one has none (!claim); 0: none */
static uint32_t claim_queued(fflow* fl, int claim)
{
    if (!fl || !(fl->flags & FL_RUNNING)) {
        return 0;
    }
    uint32_t ticket = 0;
    uint32_t mine = fl->queued_n;
    /* newest first: what a run queued is near the tail */
    for (ftask* k = fl->tool->q_tail; k && mine; k = k->prev) {
        fstrand* b = k->data;
        if (k->cb == strand_run && b->flow == fl) {
            --mine;
            if (!b->owed) {
                if (!claim) {
                    return 1;
                }
                if (!ticket) {
                    ticket = ftool_ticket(fl->tool);
                }
                b->owed = ticket;
            }
        }
    }
    return ticket;
}

uint32_t futoin_steps_claim_queued(FutoInAsyncSteps* root)
{
    return claim_queued(flow_of_root(root), 1);
}

int futoin_steps_has_queued(FutoInAsyncSteps* root)
{
    return claim_queued(flow_of_root(root), 0) != 0;
}

int futoin_steps_only_ends_flow(FutoInAsyncSteps* step)
{
    if (!step || !futoin_steps_is_native(step)) {
        return 0;
    }
    const fstep* s = fstep_of(step);
    const fstrand* st = s->strand;
    if (s->state != FS_WAIT || !st || st != &s->flow->main || st->top != s || st->err_pending || s->q_head) {
        return 0;
    }
    for (const fstep* f = s->parent; f; f = f->parent) {
        if (f->q_head || (f->kind != FK_STEP && f->kind != FK_ROOT)) {
            return 0;
        }
        if (f->kind == FK_ROOT) {
            return 1;
        }
    }
    return 0;
}

uint32_t futoin_steps_owed(FutoInAsyncSteps* step)
{
    const fstrand* st = strand_of_step(step);
    return st ? st->owed : 0;
}

int futoin_steps_execute_strand(FutoInAsyncSteps* step)
{
    if (!step || !futoin_steps_is_native(step)) {
        return 0;
    }
    fstep* s = fstep_of(step);
    if (s->kind == FK_ROOT) {
        return execute_burst(step, 1);
    }
    /* a step on its strand's stack (a queued one is on none yet) */
    if ((s->state != FS_WAIT && s->state != FS_PAR && s->state != FS_SUB) || s->flow->tool->dying) {
        return 0;
    }
    return strand_burst(s->flow, s->strand, 1);
}
