/* The FTN12 binary vtable: argument checks, cross-thread posting, then the
 * step engine. Misuse never crashes: InternalError or a report on stderr. */
#include "internal.h"
#include "sync.h"

#include <string.h>

static void report(const char* slot, const char* what)
{
    fprintf(stderr, "futoin: InternalError: %s: %s (ignored)\n", slot, what);
}

/* The engine step behind `bsi`, or NULL (reported) when it is not usable. */
static fstep* live(FutoInAsyncSteps* bsi, const char* slot)
{
    if (FTN_UNLIKELY(!bsi)) {
        report(slot, "NULL AsyncSteps pointer");
        return NULL;
    }
    fstep* s = fstep_of(bsi);
    if (FTN_UNLIKELY(s->state == FS_FREE)) {
        report(slot, "step is no longer active");
        return NULL;
    }
    return s;
}

/* live, and called on its tool's loop thread: the slots that are not
 * posted from another thread build on memory the loop thread owns (the
 * step pool, the task queue), so from another thread they are reported
 * and ignored */
static fstep* here(FutoInAsyncSteps* bsi, const char* slot)
{
    fstep* s = live(bsi, slot);
    if (FTN_UNLIKELY(s && !ftool_is_loop_thread(s->flow->tool))) {
        report(slot, "from another thread than its tool's loop thread");
        return NULL;
    }
    return s;
}

static void api_add(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh)
{
    fstep* s = here(bsi, "add()");
    if (!s) {
        return;
    }
    if (!f) {
        feng_misuse(s, "add() without an execute callback");
        return;
    }
    fstep* c = feng_add(s, FK_STEP, data);
    if (c) {
        c->fn.exec = f;
        c->eh = eh;
    }
}

void* futoin_tool_host_add(FutoInAsyncSteps* bsi, FutoInAsyncSteps_error_callback eh)
{
    fstep* s = futoin_steps_is_native(bsi) ? here(bsi, "add()") : NULL;
    FutoInAsyncSteps_execute_callback f = s ? s->flow->tool->host_exec : NULL;
    fstep* c = f ? feng_add(s, FK_STEP, NULL) : NULL;
    if (!c) {
        return NULL;
    }
    c->fn.exec = f;
    c->eh = eh;
    c->data = feng_host_data(c);
    return c->data;
}

/* Returned when parallel() cannot add: every slot on it reports and ignores. */
static fstep dead_step = {.iface = {&ftn_steps_api}, .state = FS_FREE};

static FutoInAsyncSteps* api_parallel(FutoInAsyncSteps* bsi, void* data,
                                      FutoInAsyncSteps_error_callback eh)
{
    fstep* s = here(bsi, "parallel()");
    fstep* c = s ? feng_add(s, FK_PARALLEL, data) : NULL;
    if (!c) {
        return &dead_step.iface;
    }
    c->eh = eh;
    return &c->iface;
}

static void* api_state_variable(FutoInAsyncSteps* bsi, void* data, const char* name,
                                void* (*allocate)(void*), void (*cleanup)(void*, void*))
{
    fstep* s = live(bsi, "stateVariable()");
    if (!s) {
        return NULL;
    }
    if (!name) {
        feng_misuse(s, "stateVariable() without a name");
        return NULL;
    }
    return fflow_state_var(s->flow, data, name, allocate, cleanup);
}

static void* api_stack(FutoInAsyncSteps* bsi, size_t size, void (*cleanup)(void*))
{
    fstep* s = live(bsi, "stack()");
    if (!s || s->state == FS_CANCEL) {
        return NULL;
    }
    void* p = fstep_stack(s, size, cleanup);
    if (!p) {
        feng_misuse(s, "stack(): out of memory");
    }
    return p;
}

/* ---- cross-thread completion ---- */

static void api_cancel(FutoInAsyncSteps* bsi);
static void api_free(FutoInAsyncSteps* bsi);

/* a post is for the life of the step it was made for, not a reused slot */
static int post_current(fpost* m, const char* slot)
{
    fstep* s = fstep_of(m->bsi);
    if (s->state == FS_FREE || s->gen != m->gen) {
        report(slot, "from another thread, for a step that has already ended");
        return 0;
    }
    return 1;
}

static void post_success(fpost* m)
{
    if (post_current(m, "success()")) {
        feng_success(fstep_of(m->bsi), &m->args);
    }
}

static void post_error(fpost* m)
{
    if (post_current(m, "handle_error()")) {
        feng_error(fstep_of(m->bsi), m->code, m->info);
    }
}

static void post_cancel(fpost* m)
{
    if (post_current(m, "cancel()")) {
        api_cancel(m->bsi);
    }
}

static fpost* post_new(FutoInAsyncSteps* bsi, void (*fn)(fpost*))
{
    fpost* m = ftn_calloc(sizeof(*m));
    if (m) {
        m->bsi = bsi;
        m->fn = fn;
        m->gen = __atomic_load_n(&fstep_of(bsi)->gen, __ATOMIC_RELAXED);
    }
    return m;
}

/* The tool of a step, read without touching state the loop thread changes:
 * the flow pointer is fixed for the life of the step. */
static FutoInAsyncTool* tool_any_thread(FutoInAsyncSteps* bsi)
{
    fstep* s = fstep_of(bsi);
    return s->flow ? s->flow->tool : NULL;
}

static void api_success(FutoInAsyncSteps* bsi, FutoInArgs* args)
{
    FutoInAsyncTool* t = bsi ? tool_any_thread(bsi) : NULL;
    if (FTN_UNLIKELY(t && !ftool_is_loop_thread(t))) {
        fpost* m = post_new(bsi, post_success);
        if (!m) {
            report("success()", "out of memory");
            if (args) {
                fargs_reset(args); /* taken all the same: the caller lets go of them */
            }
            return;
        }
        if (args) {
            m->args = *args;
            fargs_zero(args);
        }
        ftool_post(t, m);
        return;
    }
    fstep* s = live(bsi, "success()");
    if (!s) {
        if (args) {
            fargs_reset(args);
        }
        return;
    }
    feng_success(s, args);
}

static void api_handle_error(FutoInAsyncSteps* bsi, const char* code, const char* info)
{
    if (!code) {
        code = FUTOIN_ERR_INTERNAL_ERROR;
        info = "handle_error() without an error code";
    }
    FutoInAsyncTool* t = bsi ? tool_any_thread(bsi) : NULL;
    if (FTN_UNLIKELY(t && !ftool_is_loop_thread(t))) {
        fpost* m = post_new(bsi, post_error);
        if (m) {
            m->code = ftn_strdup(code);
            m->info = ftn_strdup(info ? info : "");
        }
        if (!m || !m->code || !m->info) {
            report("handle_error()", "out of memory");
            if (m) {
                ftn_free(m->code);
                ftn_free(m->info);
                ftn_free(m);
            }
            return;
        }
        ftool_post(t, m);
        return;
    }
    fstep* s = live(bsi, "handle_error()");
    if (s) {
        feng_error(s, code, info);
    }
}

/* in its callback, or waiting for an event, on the loop thread: the calls
 * an event's callback may make on a step (as futoin-asyncsteps takes them) */
static int in_callback_or_waiting(const fstep* s)
{
    return feng_in_callback(s) || (s->state == FS_WAIT && ftool_is_loop_thread(s->flow->tool));
}

/* from another thread (reported: it would race the loop thread over the
 * step), or in its callback after success(): nothing can wait on the step
 * any more (as add() then); 1 when it was */
static int not_waitable(fstep* s, const char* slot)
{
    if (FTN_UNLIKELY(!ftool_is_loop_thread(s->flow->tool))) {
        feng_misuse(s, slot);
        return 1;
    }
    if (FTN_UNLIKELY(feng_in_callback(s) && (s->flags & F_SUCCESS))) {
        char what[48];
        snprintf(what, sizeof(what), "%s after success()", slot);
        feng_misuse(s, what);
        return 1;
    }
    return 0;
}

static void api_set_timeout(FutoInAsyncSteps* bsi, uint32_t timeout_ms)
{
    fstep* s = live(bsi, "setTimeout()");
    if (!s || not_waitable(s, "setTimeout()")) {
        return;
    }
    /* a step waiting for an event may restart its timeout from outside, on
     * the loop thread (a deadline pushed back on progress), as setCancel()
     * may be set then */
    if (!in_callback_or_waiting(s)) {
        if (!feng_outer_misuse(s, "setTimeout()")) {
            feng_misuse(s, "setTimeout() outside of a step callback");
        }
        return;
    }
    feng_set_timeout(s, timeout_ms);
}

static void api_set_cancel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    fstep* s = live(bsi, "setCancel()");
    if (!s) {
        return;
    }
    if (!ch) {
        feng_misuse(s, "setCancel() without a callback");
        return;
    }
    if (not_waitable(s, "setCancel()")) {
        return;
    }
    if (!feng_in_callback(s) && s->state != FS_WAIT) {
        if (!feng_outer_misuse(s, "setCancel()")) {
            feng_misuse(s, "setCancel() outside of a step callback");
        }
        return;
    }
    s->on_cancel = ch;
    s->cancel_data = data;
    s->flags |= F_WAIT;
}

static void api_wait_external(FutoInAsyncSteps* bsi)
{
    fstep* s = live(bsi, "waitExternal()");
    if (!s || not_waitable(s, "waitExternal()")) {
        return;
    }
    if (!feng_in_callback(s)) {
        /* a step that waits already: nothing to do, as in futoin-asyncsteps */
        if (s->state != FS_WAIT && !feng_outer_misuse(s, "waitExternal()")) {
            feng_misuse(s, "waitExternal() outside of a step callback");
        }
        return;
    }
    s->flags |= F_WAIT;
}

static void loop_label_lost(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "loop(): out of memory for its label");
}

static fstep* add_loop(FutoInAsyncSteps* bsi, void* data, int kind, int has_f, const char* label)
{
    fstep* s = here(bsi, kind == FK_LOOP ? "loop()" : "repeat()");
    if (!s) {
        return NULL;
    }
    if (!has_f) {
        feng_misuse(s, "loop without a body callback");
        return NULL;
    }
    fstep* c = feng_add(s, kind, data);
    if (!c) {
        return NULL;
    }
    if (label) {
        /* the copy lives in the loop step's own (pooled) stack memory */
        size_t n = strlen(label) + 1;
        char* copy = fstep_stack(c, n, NULL);
        if (!copy) {
            /* without its label it would take breaks meant for an outer
             * loop: it fails where it stands instead */
            feng_misuse(s, "out of memory");
            c->kind = FK_STEP;
            c->data = NULL;
            c->fn.exec = loop_label_lost;
            return NULL;
        }
        memcpy(copy, label, n);
        c->u.loop.label = copy;
    }
    return c;
}

static void api_loop(FutoInAsyncSteps* bsi, void* data, void (*f)(FutoInAsyncSteps*, void*),
                     const char* label)
{
    fstep* c = add_loop(bsi, data, FK_LOOP, f != NULL, label);
    if (c) {
        c->fn.loop = f;
    }
}

static void api_repeat(FutoInAsyncSteps* bsi, void* data, size_t count,
                       void (*f)(FutoInAsyncSteps*, void*, size_t), const char* label)
{
    fstep* c = add_loop(bsi, data, FK_REPEAT, f != NULL, label);
    if (c) {
        c->fn.repeat = f;
        c->u.loop.count = count;
    }
}

static void loop_ctl(FutoInAsyncSteps* bsi, const char* code, const char* label, const char* name,
                     const char* slot)
{
    fstep* s = live(bsi, slot);
    if (!s) {
        return;
    }
    if (!in_callback_or_waiting(s)) {
        if (!feng_outer_misuse(s, name)) {
            feng_misuse(s, slot);
        }
        return;
    }
    feng_error(s, code, label ? label : "");
}

static void api_break_loop(FutoInAsyncSteps* bsi, const char* label)
{
    loop_ctl(bsi, FUTOIN_ERR_LOOP_BREAK, label, "breakLoop()", "breakLoop() outside of a step callback");
}

static void api_continue_loop(FutoInAsyncSteps* bsi, const char* label)
{
    loop_ctl(bsi, FUTOIN_ERR_LOOP_CONT, label, "continueLoop()", "continueLoop() outside of a step callback");
}

static void api_execute(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback eh)
{
    fstep* s = here(bsi, "execute()");
    if (!s) {
        return;
    }
    if (s->kind != FK_ROOT) {
        feng_misuse(s, "execute() on a step that is not a root");
        return;
    }
    if (s->flow->flags & FL_FREE_REQ) {
        /* free() inside one of its callbacks takes effect as that returns:
         * a run started now would be cancelled by it, its hooks could
         * start another, and so on for ever */
        report("execute()", "the root was freed");
        return;
    }
    feng_execute(s->flow, data, eh);
}

/* a call from another thread than bsi's loop thread goes there as a post:
 * 1 when it did */
static inline int posted_to_loop(FutoInAsyncSteps* bsi, void (*fn)(fpost*), const char* slot)
{
    FutoInAsyncTool* t = bsi ? tool_any_thread(bsi) : NULL;
    if (FTN_LIKELY(!t || ftool_is_loop_thread(t))) {
        return 0;
    }
    fpost* m = post_new(bsi, fn);
    if (m) {
        ftool_post(t, m);
    } else {
        report(slot, "out of memory");
    }
    return 1;
}

static void api_cancel(FutoInAsyncSteps* bsi)
{
    if (posted_to_loop(bsi, post_cancel, "cancel()")) {
        return;
    }
    fstep* s = live(bsi, "cancel()");
    if (!s) {
        return;
    }
    if (s->kind != FK_ROOT) {
        feng_misuse(s, "cancel() on a step that is not a root");
        return;
    }
    feng_cancel(s->flow);
}

static void api_add_sync(FutoInAsyncSteps* bsi, FutoInSync* sync, void* data,
                         FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh)
{
    fstep* s = here(bsi, "addSync()");
    if (!s) {
        return;
    }
    if (!sync || !sync->api || !sync->api->lock || !sync->api->unlock) {
        feng_misuse(s, "addSync() without a valid sync object");
        return;
    }
    if (!f) {
        feng_misuse(s, "addSync() without an execute callback");
        return;
    }
    fstep* c = feng_add(s, FK_SYNC, data);
    if (c) {
        c->fn.exec = f;
        c->u.sync.sync = sync;
        c->u.sync.user_eh = eh;
        fsync_use(sync);
    }
}

static ptrdiff_t api_root_id(FutoInAsyncSteps* bsi)
{
    fstep* s = live(bsi, "rootId()");
    while (s && !s->strand) {
        s = s->parent;
    }
    return s ? s->strand->id : 0;
}

/* the C++ reference's bool cast: a root that is not executing, a step that
 * runs innermost (its callback, its handler, or waiting), a parallel() not
 * started yet; not while sub-steps or branches run, not once ended */
static int api_is_valid(FutoInAsyncSteps* bsi)
{
    if (!bsi || futoin_steps_is_cancelled(bsi)) {
        return 0;
    }
    switch (fstep_of(bsi)->state) {
    case FS_IDLE:
    case FS_QUEUED:
    case FS_EXEC:
    case FS_EH:
    case FS_WAIT:
        return 1;
    default:
        return 0;
    }
}

static FutoInAsyncSteps* api_new_instance(FutoInAsyncSteps* bsi)
{
    fstep* s = live(bsi, "newInstance()");
    return s ? futoin_steps_new(s->flow->tool) : NULL;
}

static void post_free_root(fpost* m)
{
    if (post_current(m, "free()")) {
        api_free(m->bsi);
    }
}

static void api_free(FutoInAsyncSteps* bsi)
{
    /* the root's memory goes back to the tool's pool: on its thread; but a
     * tool futoin_tool_free() let go runs no loop any more, and its last
     * roots go on the caller's thread */
    FutoInAsyncTool* t = bsi ? tool_any_thread(bsi) : NULL;
    if (!(t && t->dying) && posted_to_loop(bsi, post_free_root, "free()")) {
        return;
    }
    fstep* s = live(bsi, "free()");
    if (!s) {
        return;
    }
    if (s->kind != FK_ROOT) {
        report("free()", "not a root created by futoin_steps_new() or newInstance()");
        return;
    }
    feng_flow_free(s->flow);
}

static FutoInAsyncTool* tool_of(FutoInAsyncSteps* bsi, const char* slot)
{
    fstep* s = here(bsi, slot);
    return s ? s->flow->tool : NULL;
}

/* the scheduler slots take calls from any thread, as the C++ reference's
 * AsyncTool: from another one they are posted (tool_remote.c) */
static FutoInAsyncTool* sched_tool(FutoInAsyncSteps* bsi, const char* slot, int* remote)
{
    FutoInAsyncTool* t = bsi ? tool_any_thread(bsi) : NULL;
    *remote = t && !ftool_is_loop_thread(t);
    return *remote ? t : tool_of(bsi, slot);
}

/* delay_ms < 0: immediate() */
static FutoInHandle sched_at(FutoInAsyncSteps* bsi, const char* slot, int64_t delay_ms, void* data,
                             void (*cb)(void*))
{
    int remote;
    FutoInAsyncTool* t = sched_tool(bsi, slot, &remote);
    FutoInHandle none = {NULL, NULL, 0};
    if (!t) {
        return none;
    }
    return remote ? ftool_remote_schedule(t, delay_ms, data, cb) : ftool_schedule(t, delay_ms, data, cb);
}

static FutoInHandle api_sched_immediate(FutoInAsyncSteps* bsi, void* data, void (*cb)(void*))
{
    return sched_at(bsi, "sched_immediate()", -1, data, cb);
}

static FutoInHandle api_sched_deferred(FutoInAsyncSteps* bsi, uint32_t delay_ms, void* data,
                                       void (*cb)(void*))
{
    return sched_at(bsi, "sched_deferred()", delay_ms, data, cb);
}

static void api_sched_cancel(FutoInAsyncSteps* bsi, FutoInHandle* handle)
{
    int remote;
    FutoInAsyncTool* t = sched_tool(bsi, "sched_cancel()", &remote);
    if (t && ftool_remote_handle(t, handle)) {
        ftool_remote_cancel(t, handle);
    } else if (remote) {
        ftool_handle_cancel_off_loop(t, handle);
    } else if (t) {
        ftool_handle_cancel(t, handle);
    }
}

static int api_sched_is_valid(FutoInAsyncSteps* bsi, FutoInHandle* handle)
{
    int remote;
    FutoInAsyncTool* t = sched_tool(bsi, "sched_is_valid()", &remote);
    if (t && ftool_remote_handle(t, handle)) {
        return ftool_remote_valid(handle);
    }
    if (remote) {
        return ftool_handle_valid_off_loop(t, handle);
    }
    return t ? ftool_handle_valid(t, handle) : 0;
}

static int api_is_same_thread(FutoInAsyncSteps* bsi)
{
    FutoInAsyncTool* t = bsi ? tool_any_thread(bsi) : NULL;
    return t ? ftool_is_loop_thread(t) : 0;
}

const FutoInAsyncStepsAPI ftn_steps_api = {{{
        api_add,
        api_parallel,
        api_state_variable,
        api_stack,
        api_success,
        api_handle_error,
        api_set_timeout,
        api_set_cancel,
        api_wait_external,
        api_loop,
        api_repeat,
        api_break_loop,
        api_continue_loop,
        api_execute,
        api_cancel,
        api_add_sync,
        api_root_id,
        api_is_valid,
        api_new_instance,
        api_free,
        api_sched_immediate,
        api_sched_deferred,
        api_sched_cancel,
        api_sched_is_valid,
        api_is_same_thread,
}}};

/* ---- public entry points ---- */

FutoInAsyncSteps* futoin_steps_new(FutoInAsyncTool* tool)
{
    if (!tool || tool->dying) {
        return NULL;
    }
    /* on another thread too, as the C++ reference allows */
    fflow* fl = ftool_is_loop_thread(tool) ? feng_flow_new(tool) : feng_flow_new_remote(tool);
    return fl ? &fl->base.iface : NULL;
}

int futoin_steps_is_native(const FutoInAsyncSteps* bsi)
{
    return bsi && bsi->api == &ftn_steps_api && bsi != &dead_step.iface;
}

int futoin_steps_is_cancelled(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return 0;
    }
    const fstep* s = fstep_of(bsi);
    return s->kind != FK_ROOT && s->state != FS_FREE && (s->flow->flags & (FL_CANCEL_REQ | FL_FREE_REQ)) != 0;
}

void futoin_steps_last_exception_mark(FutoInAsyncSteps* bsi, int for_next_error)
{
    if (!futoin_steps_is_native(bsi)) {
        return;
    }
    fflow* fl = fstep_of(bsi)->flow;
    if (!fl) {
        return;
    }
    fl->le_fresh = for_next_error != 0;
    if (!for_next_error) {
        fl->le_seen_type = fl->last_exception.type;
        fl->le_seen_p = fl->last_exception.p;
    }
}

uint32_t futoin_steps_error_gen(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return 0;
    }
    fflow* fl = fstep_of(bsi)->flow;
    return fl ? fl->err_gen : 0;
}

int futoin_steps_is_top(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return 0;
    }
    const fstep* s = fstep_of(bsi);
    return s->kind != FK_ROOT && s->state != FS_FREE && s->strand && s->strand->top == s;
}

int futoin_steps_is_waiting(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return 0;
    }
    const fstep* s = fstep_of(bsi);
    /* any kind of step that waits: a plain one, a loop body, a sync lock */
    return s->kind != FK_ROOT && s->state == FS_WAIT && !(s->flags & F_SUCCESS) && s->strand && s->strand->top == s
        && !s->strand->err_pending;
}

int futoin_steps_runs_substeps(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return 0;
    }
    const fstep* s = fstep_of(bsi);
    return s->kind != FK_ROOT && s->state == FS_SUB;
}

int futoin_steps_defer_after(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return 0;
    }
    fstep* s = fstep_of(bsi);
    if (s->kind == FK_ROOT || s->state != FS_EXEC || !s->strand) {
        return 0;
    }
    s->flags |= F_DEFER;
    s->strand->handlers_only = 1; /* a burst of 0 when its callback returns */
    s->strand->owed = ftool_ticket(s->flow->tool);
    return 1;
}

int futoin_steps_in_branch(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return 0;
    }
    const fstep* s = fstep_of(bsi);
    return s->kind != FK_ROOT && s->state != FS_FREE && s->strand && s->strand != &s->flow->main;
}

int futoin_steps_is_root(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi)) {
        return -1;
    }
    const fstep* s = fstep_of(bsi);
    return s->kind == FK_ROOT && s->state != FS_FREE;
}

FutoInAsyncTool* futoin_steps_tool(FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_is_native(bsi) || fstep_of(bsi)->state == FS_FREE) {
        return NULL;
    }
    return fstep_of(bsi)->flow->tool;
}

const char* futoin_version(void)
{
    return FUTOIN_VERSION_STRING;
}

int futoin_abi_version(void)
{
    return FUTOIN_ABI_VERSION;
}
