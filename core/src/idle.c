/*
 * Idle flows: an executing flow that only a call on one of its host's steps
 * can move on. A host whose step objects are garbage-collected (Node) lets
 * such a flow go with its last reference, as a flow of a garbage-collected
 * implementation goes; it needs to know the flow is idle and which of its
 * callback data it keeps, to hold that data as weakly as the flow. A host
 * that runs its steps as plain callbacks (Python) names them itself.
 */
#include "internal.h"

/* the host's callback data `s` keeps, NULL: none */
static void* host_data_of(const fstep* s, const FutoInIdleHost* h)
{
    switch (s->kind) {
    case FK_STEP:
    case FK_SYNC:
        if (s->fn.exec && s->fn.exec == h->exec) {
            return s->data;
        }
        break;
    case FK_LOOP:
        if (s->fn.loop && s->fn.loop == h->loop) {
            return s->data;
        }
        break;
    case FK_REPEAT:
        if (s->fn.repeat && s->fn.repeat == h->repeat) {
            return s->data;
        }
        break;
    default:
        break;
    }
    return s->eh && s->eh == h->eh ? s->data : NULL;
}

static void host_data_each(const fstep* s, const FutoInIdleHost* h, void (*each)(void* ctx, void* data), void* ctx)
{
    void* d = host_data_of(s, h);
    if (d) {
        each(ctx, d);
    }
    if (s->on_cancel && s->on_cancel == h->cancel) {
        each(ctx, s->cancel_data);
    }
}

/* s waits for a call from its host: a plain host step or a host loop body,
 * not completed, no error on its way */
static int waits_for_host(const fstep* s, const fstrand* st, const FutoInIdleHost* h)
{
    if (s->state != FS_WAIT || (s->flags & (F_SUCCESS | F_ERROR)) || st->err_pending) {
        return 0;
    }
    switch (s->kind) {
    case FK_STEP:
        return s->fn.exec && s->fn.exec == h->exec;
    case FK_LOOP_BODY:
        return s->parent->fn.loop && s->parent->fn.loop == h->loop;
    case FK_REPEAT_BODY:
        return s->parent->fn.repeat && s->parent->fn.repeat == h->repeat;
    default:
        return 0;
    }
}

/* one strand's frames (top to base) and their queued children, the
 * branches a queued parallel step holds; 0 when something of it can go on
 * without the host (a timer, a sync object) */
static int strand_check(const fstrand* st, const FutoInIdleHost* h, void (*each)(void* ctx, void* data), void* ctx)
{
    for (const fstep* f = st->top;; f = f->parent) {
        if (f->timer || f->kind == FK_SYNC || f->kind == FK_SYNC_LOCK) {
            return 0;
        }
        if (each) {
            host_data_each(f, h, each, ctx);
            for (const fstep* c = f->q_head; c; c = c->next) {
                host_data_each(c, h, each, ctx);
                for (const fstep* b = c->kind == FK_PARALLEL ? c->q_head : NULL; b; b = b->next) {
                    host_data_each(b, h, each, ctx);
                }
            }
        }
        if (f == st->base) {
            return 1;
        }
    }
}

/* every strand of fl, parents before their branches, without recursion;
 * 0 as soon as one is not idle */
static int flow_walk(fflow* fl, const FutoInIdleHost* h, void (*each)(void* ctx, void* data), void* ctx)
{
    const fstrand* st = &fl->main;
    for (;;) {
        if (st->task.queued || st->in_host_q || st->err_pending || !strand_check(st, h, each, ctx)) {
            return 0;
        }
        const fstep* top = st->top;
        if (top->kind == FK_PARALLEL && top->state == FS_PAR) {
            if ((top->flags & F_SUCCESS) || !top->u.par.branches) {
                return 0; /* about to go on */
            }
            st = top->u.par.branches;
            continue;
        }
        if (!waits_for_host(top, st, h)) {
            return 0;
        }
        while (!st->sib_next) {
            if (st == &fl->main) {
                return 1;
            }
            st = st->par->strand; /* its parallel step's strand: checked already */
        }
        st = st->sib_next;
    }
}

/* the flow of a live root of this library, NULL for anything else */
static fflow* root_flow(FutoInAsyncSteps* root)
{
    if (!root || !futoin_steps_is_native(root)) {
        return NULL;
    }
    const fstep* r = fstep_of(root);
    return r->kind == FK_ROOT && r->state != FS_FREE ? r->flow : NULL;
}

static int flow_idle(fflow* fl, const FutoInIdleHost* host, void (*each)(void* ctx, void* data), void* ctx)
{
    const FutoInAsyncTool* t = fl->tool;
    if (!(fl->flags & FL_RUNNING) || (fl->flags & (FL_CANCEL_REQ | FL_FREE_REQ)) || fl->depth || fl->host_queued
        || t->dying || !ftool_is_loop_thread(fl->tool)) {
        return 0;
    }
    /* checked whole first: `each` hears of nothing unless the flow is idle */
    if (!flow_walk(fl, host, NULL, NULL)) {
        return 0;
    }
    if (each) {
        flow_walk(fl, host, each, ctx);
    }
    return 1;
}

int futoin_steps_idle_in(FutoInAsyncSteps* root, const FutoInIdleHost* host, void (*each)(void* ctx, void* data),
                         void* ctx)
{
    fflow* fl = root_flow(root);
    return fl && host && host->exec && flow_idle(fl, host, each, ctx);
}

int futoin_steps_host_idle(FutoInAsyncSteps* root, FutoInAsyncSteps_cancel_callback cancel,
                           void (*each)(void* ctx, void* data), void* ctx)
{
    fflow* fl = root_flow(root);
    if (!fl || !fl->tool->host_exec) {
        return 0;
    }
    const FutoInAsyncTool* t = fl->tool;
    const FutoInIdleHost h = {t->host_exec, t->host_eh, t->host_loop, t->host_repeat, cancel};
    return flow_idle(fl, &h, each, ctx);
}
