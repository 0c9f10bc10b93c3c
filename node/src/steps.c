/*
 * AsyncSteps for JS: the natives behind lib/AsyncSteps.js and the
 * trampolines through which the engine calls JS callbacks.
 *
 * A JS callback runs inside a JS dispatcher (lib/AsyncSteps.js) that
 * catches every exception and turns it into the flow's error, and returns
 * what the callback did (JS_F_*), so C learns without another call whether
 * the step is still active and its handle must outlive the call. Plain JS
 * steps of our roots are pulled by JS (hostNext/hostDone); error handlers,
 * cancel handlers, loop bodies and wrapped flows' steps are called from C.
 */
#include "addon.h"

#include <stdlib.h>
#include <string.h>

#define KINDS_ADD ((1 << HK_STEP) | (1 << HK_ROOT) | (1 << HK_PARALLEL) | (1 << HK_FOREIGN))
#define KINDS_STEP ((1 << HK_STEP) | (1 << HK_FOREIGN))
#define KINDS_ROOT ((1 << HK_ROOT) | (1 << HK_FOREIGN))
#define MODE_STEP 0
#define MODE_LOOP 1
#define MODE_REPEAT 2

static const char k_stale[] = "InternalError: Unexpected call, object is out of service";

static void root_strong(jroot* r, int on);

/* ---- lists for JS ---- */

/* 0, or -1 out of memory (the list keeps what it had) */
static int ivec_push(ivec* l, int32_t x)
{
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 256;
        int32_t* v = realloc(l->v, cap * sizeof(int32_t));
        if (!v) {
            l->oom = 1;
            return -1;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

/* the list as an Int32Array (NULL after throwing); it is emptied */
static napi_value ivec_take(napi_env env, ivec* l)
{
    napi_value arr, ab;
    void* data = NULL;
    uint32_t n = l->n;
    l->n = 0;
    l->oom = 0;
    NAPI_OK(napi_create_arraybuffer(env, n * sizeof(int32_t), &data, &ab));
    if (n) {
        memcpy(data, l->v, n * sizeof(int32_t));
    }
    NAPI_OK(napi_create_typedarray(env, napi_int32_array, n, ab, 0, &arr));
    return arr;
}

/* ---- JS callback indices ---- */

/* the index goes back to JS (lib/registry.js) for reuse */
static void release_k(jsenv* e, uint32_t k)
{
    int32_t* sh = e->sh;
    if (sh[SH_FREED_N] < SH_FREED_CAP) {
        sh[SH_FREED + sh[SH_FREED_N]++] = (int32_t)k;
        return;
    }
    if (ivec_push(&e->spill, (int32_t)k) == 0) { /* else the index is lost, not reused */
        sh[SH_SPILL] = (int32_t)e->spill.n;
    }
}

/* a finished root for JS to forget (drainFin): in SH_FIN, past its room in
 * a list JS fetches with drainFinSpill() (a lost one would stay running
 * for JS for good) */
static void fin_list(jsenv* e, int32_t slot, int32_t gen)
{
    int32_t* sh = e->sh;
    if (sh[SH_FIN_N] + 2 <= SH_FIN_CAP) {
        sh[SH_FIN + sh[SH_FIN_N]++] = slot;
        sh[SH_FIN + sh[SH_FIN_N]++] = gen;
        return;
    }
    uint32_t mark = e->fin_spill.n;
    if (ivec_push(&e->fin_spill, slot) || ivec_push(&e->fin_spill, gen)) {
        e->fin_spill.n = mark; /* out of memory: that root stays listed as running */
        return;
    }
    sh[SH_FIN_MORE] = (int32_t)e->fin_spill.n;
}

/* a handle slot kept while its step lives: free unless freed already */
static void slot_release(jsenv* e, uint32_t slot, uint32_t gen)
{
    if (slot < e->nslots && e->slots[slot].gen == gen && e->slots[slot].kind != HK_FREE) {
        jh_free(e, slot);
    }
}

/* the step of this frag is gone (host cleanup of its own data, or the
 * stack() cleanup of the step it was allocated on) */
static void frag_cleanup(void* p)
{
    jfrag* f = p;
    jsenv* e = tl_env;
    if (!e) {
        return;
    }
    if (f->k != JK_NONE) {
        release_k(e, f->k);
    }
    if (f->kept) {
        slot_release(e, f->kept, f->kept_gen);
    }
    jroot* r = f->root;
    if (r && r->foreign && --r->live == 0) {
        root_strong(r, 0);
    }
}

static jfrag* frag_init(jfrag* f, jroot* r, uint32_t k)
{
    if (!f) {
        return NULL;
    }
    f->root = r;
    f->k = k;
    f->no_eh = 0;
    f->batch = 0;
    f->own = 0;
    f->kept = 0;
    if (r->foreign && r->live++ == 0) {
        root_strong(r, 1); /* a foreign flow holds our callbacks: keep them */
    }
    return f;
}

jfrag* jr_frag(FutoInAsyncSteps* owner, jroot* r, uint32_t k)
{
    return frag_init(owner->api->stack(owner, sizeof(jfrag), frag_cleanup), r, k);
}

/* a C step whose error handler is JS (registry index k): the C function
 * is called with its own data */
typedef struct jcfrag
{
    jfrag f;
    FutoInAsyncSteps_execute_callback fn;
    void* data;
} jcfrag;

static void tr_cexec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    const jcfrag* c = data;
    c->fn(bsi, c->data, args);
}

static FutoInAsyncSteps_error_callback eh_cb(const jroot* r);

int js_add_c_with_js_eh(FutoInAsyncSteps* bsi, jroot* r, FutoInAsyncSteps_execute_callback fn, void* data,
                        uint32_t k)
{
    jcfrag* c = bsi->api->stack(bsi, sizeof(jcfrag), frag_cleanup);
    if (!frag_init(c ? &c->f : NULL, r, k)) {
        release_k(tl_env, k); /* the handler registered for it */
        return -1;
    }
    c->fn = fn;
    c->data = data;
    bsi->api->add(bsi, c, tr_cexec, eh_cb(r));
    return 0;
}

/* ---- step handles that outlive the callback ---- */

typedef struct slot_keep
{
    uint32_t slot, gen;
} slot_keep;

static void slot_cleanup(void* p)
{
    slot_keep* k = p;
    jsenv* e = tl_env;
    if (e) {
        slot_release(e, k->slot, k->gen);
    }
}

static void keep_slot(jsenv* e, FutoInAsyncSteps* bsi, uint32_t s)
{
    jfrag* f = e->slots[s].frag;
    if (f && f->own && !f->kept) {
        f->kept = s; /* in the step's own data: no allocation */
        f->kept_gen = e->slots[s].gen;
        return;
    }
    slot_keep* k = bsi->api->stack(bsi, sizeof(slot_keep), slot_cleanup);
    if (!k) {
        jh_free(e, s);
        return;
    }
    k->slot = s;
    k->gen = e->slots[s].gen;
}

/* ---- calling JS ---- */

static void report_js_exception(jsenv* e, FutoInAsyncSteps* bsi)
{
    napi_env env = e->env;
    napi_value exc, msg;
    char buf[512] = "exception in the JS dispatcher";
    if (napi_get_and_clear_last_exception(env, &exc) == napi_ok) {
        jd_lib_exception(e, exc);
        if (napi_coerce_to_string(env, exc, &msg) == napi_ok) {
            size_t n;
            napi_get_value_string_utf8(env, msg, buf, sizeof(buf), &n);
        } else {
            napi_get_and_clear_last_exception(env, &msg);
        }
    }
    if (bsi) {
        bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, buf);
    }
}

static int32_t call_js(jsenv* e, napi_ref fn, FutoInAsyncSteps* bsi, size_t argc, napi_value* argv)
{
    napi_env env = e->env;
    napi_value f, undef, ret;
    if (fn == e->f_step && e->lz.scope && e->lz.f_step) {
        f = e->lz.f_step; /* values of the shared scope stay valid in it */
        undef = e->lz.undef;
    } else {
        napi_get_reference_value(env, fn, &f);
        napi_get_undefined(env, &undef);
        if (fn == e->f_step && e->lz.scope) {
            e->lz.f_step = f;
            e->lz.undef = undef;
        }
    }
    /* JS (user code) may call any instance: the first one's functions take
     * tl_env as theirs, a guest's switch for themselves */
    jsenv* prev = js_env_switch(js_env_first());
    napi_status st = napi_call_function(env, undef, f, argc, argv, &ret);
    js_env_switch(prev);
    if (st != napi_ok) {
        report_js_exception(e, bsi);
        return JS_F_DONE;
    }
    int32_t flags = 0;
    napi_get_value_int32(env, ret, &flags);
    return flags;
}

/* fn(...argv) of lib/AsyncSteps.js for no step: its int32 result, JS_F_DONE
 * when the library's code threw (thrown on from the next turn) */
int32_t js_call_fn(jsenv* e, napi_ref fn, size_t argc, napi_value* argv)
{
    return call_js(e, fn, NULL, argc, argv);
}

/* what JS finds the root by: the slot of one of our roots (lib/registry.js
 * keeps the running ones), the view object of a wrapped one */
static int root_arg(jsenv* e, jroot* r, napi_value* out)
{
    if (!r) {
        return -1;
    }
    if (r->foreign) {
        return napi_get_reference_value(e->env, r->obj, out) == napi_ok && *out ? 0 : -1;
    }
    if (r->slot == e->exec_slot && e->exec_obj) {
        *out = e->exec_obj;
        return 0;
    }
    return napi_create_uint32(e->env, r->slot, out) == napi_ok ? 0 : -1;
}

int32_t js_dispatch(jsenv* e, napi_ref fn, FutoInAsyncSteps* bsi, jroot* r, size_t argc, napi_value* argv)
{
    if (root_arg(e, r, &argv[0]) != 0) {
        bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "the JS AsyncSteps object is gone");
        return JS_F_DONE;
    }
    uint32_t s = fn == e->f_error ? jh_alloc(e, bsi, r, HK_STEP) : jh_alloc_step(e, bsi, r, HK_STEP);
    if (!s) {
        bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "too many active steps");
        return JS_F_DONE;
    }
    jh_new_id(e, s, &argv[1]);
    int32_t flags = call_js(e, fn, bsi, argc, argv);
    if (e->sh[SH_OPS_N]) {
        js_flush_ops(e);
    }
    if ((flags & JS_F_DONE) || !(flags & (JS_F_ADDED | JS_F_WAIT))) {
        jh_free(e, s);
    } else {
        keep_slot(e, bsi, s);
    }
    return flags;
}

/* JS gets (root, handle, code, values...) with code = k * 32 + mode * 8 +
 * (the number of values + 1); a pack of more than four values is one array
 * (number -1) */
void js_run_step(FutoInAsyncSteps* bsi, jfrag* f, int mode, const FutoInArgs* args, size_t i)
{
    jsenv* e = f->root->e;
    napi_env env = e->env;
    napi_handle_scope local = NULL;
    if (!e->lz.ok) {
        if (napi_open_handle_scope(env, &local) != napi_ok) {
            bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "no JS handle scope");
            return;
        }
    } else if (!e->lz.scope) {
        if (napi_open_handle_scope(env, &e->lz.scope) != napi_ok) {
            e->lz.scope = NULL;
            bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "no JS handle scope");
            return;
        }
        e->lz.f_step = NULL;
    }
    napi_value argv[7];
    int n = 0;
    if (mode == MODE_REPEAT) {
        if (i <= INT32_MAX) {
            napi_create_int32(env, (int32_t)i, &argv[3]);
        } else {
            napi_create_double(env, (double)i, &argv[3]);
        }
        n = 1;
    } else if (args && args->arg0.type) {
        n = jv_from_args(env, args, &argv[3]);
        if (n < 0) {
            n = -1; /* one array of all the values */
        }
        for (int j = 0; j < (n < 0 ? 1 : n); ++j) {
            if (!argv[3 + j]) {
                napi_get_undefined(env, &argv[3 + j]);
            }
        }
    }
    napi_create_int32(env, (int32_t)(f->k * 32 + (uint32_t)mode * 8 + (uint32_t)(n + 1)), &argv[2]);
    f->root->jerr = 0; /* onStep clears _jsErr */
    js_dispatch(e, e->f_step, bsi, f->root, 3 + (size_t)(n < 0 ? 1 : n), argv);
    ++e->turn_steps;
    if (local) {
        napi_close_handle_scope(env, local);
    } else if (++e->lz.uses >= 64) {
        napi_close_handle_scope(env, e->lz.scope);
        e->lz.scope = NULL;
        e->lz.uses = 0;
        e->lz.f_step = NULL;
    }
}

static void tr_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    js_run_step(bsi, data, MODE_STEP, args, 0);
}

/* The callback of plain JS steps of our own roots: the engine hands them to
 * JS (hostNext/hostDone, lib/AsyncSteps.js drains them), so a step costs a
 * call from JS into C instead of the dearer call from C into JS. Called
 * only if some engine runs it itself: then it works as tr_step. */
static void tr_host_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ((jfrag*)data)->root->e->host_fallbacks++;
    js_run_step(bsi, data, MODE_STEP, args, 0);
}

static FutoInAsyncSteps_execute_callback step_cb(const jroot* r)
{
    return r->foreign ? tr_step : tr_host_step;
}

static void tr_loop(FutoInAsyncSteps* bsi, void* data)
{
    js_run_step(bsi, data, MODE_LOOP, NULL, 0);
}

static void tr_repeat(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    js_run_step(bsi, data, MODE_REPEAT, NULL, i);
}

/* loop and repeat bodies of our own roots: taken by JS as host steps too */
static void tr_host_loop(FutoInAsyncSteps* bsi, void* data)
{
    ((jfrag*)data)->root->e->host_fallbacks++;
    js_run_step(bsi, data, MODE_LOOP, NULL, 0);
}

static void tr_host_repeat(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    ((jfrag*)data)->root->e->host_fallbacks++;
    js_run_step(bsi, data, MODE_REPEAT, NULL, i);
}

/* r->jbuf mirrors the JS root's _jsErr and _jsInfo, the error JS raised or
 * was handed last (lib/AsyncSteps.js syncErrorState): the same error again
 * leaves JS state as it is, so no strings need to be made for it */
static void jerr_set(jroot* r, const char* code, const char* info)
{
    code = code ? code : "";
    info = info ? info : "";
    size_t nc = strlen(code) + 1, ni = strlen(info) + 1;
    if (nc + ni > r->jcap) {
        char* b = realloc(r->jbuf, nc + ni);
        if (!b) {
            r->jerr = 0; /* JS gets the strings every time */
            return;
        }
        r->jbuf = b;
        r->jcap = nc + ni;
    }
    memcpy(r->jbuf, code, nc);
    memcpy(r->jbuf + nc, info, ni);
    r->jerr = 1;
}

static int jerr_same(const jroot* r, const char* code, const char* info)
{
    code = code ? code : "";
    return r->jerr && strcmp(r->jbuf, code) == 0 && strcmp(r->jbuf + strlen(code) + 1, info ? info : "") == 0;
}

/* 1 when the error a handler of bsi (or the end of root bsi) is told came
 * out of a parallel branch since: JS makes it a new Error then, as the
 * reference raises it on the parallel step anew (SH_ERR_FRESH) */
static int err_fresh(jsenv* e, FutoInAsyncSteps* bsi)
{
    if (!futoin_steps_take_error_crossed(bsi)) {
        return 0;
    }
    e->sh[SH_ERR_FRESH] = 1;
    return 1;
}

static const char* error_info_of(FutoInAsyncSteps* bsi)
{
    return bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
}

/* out[0], out[1]: the error code and error_info (undefined if none) of an
 * error handed to JS, which takes them as its root's _jsErr and _jsInfo */
static void error_values(napi_env env, jroot* r, const char* code, const char* info, napi_value* out)
{
    jerr_set(r, code, info);
    napi_create_string_utf8(env, code ? code : "", NAPI_AUTO_LENGTH, &out[0]);
    if (info && *info) {
        napi_create_string_utf8(env, info, NAPI_AUTO_LENGTH, &out[1]);
    } else {
        napi_get_undefined(env, &out[1]);
    }
}

static void tr_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    jfrag* f = data;
    jsenv* e = tl_env;
    napi_env env = e->env;
    napi_handle_scope hs;
    if (napi_open_handle_scope(env, &hs) != napi_ok) {
        return;
    }
    napi_value argv[5];
    napi_create_uint32(env, f->k + 1, &argv[2]);
    error_values(env, f->root, code, error_info_of(bsi), &argv[3]);
    err_fresh(e, bsi);
    js_dispatch(e, e->f_error, bsi, f->root, 5, argv);
    e->sh[SH_ERR_FRESH] = 0;
    napi_close_handle_scope(env, hs);
}

/* error handlers of our own roots: taken by JS as host steps too */
static void tr_host_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    ((jfrag*)data)->root->e->host_fallbacks++;
    tr_error(bsi, data, code);
}

static FutoInAsyncSteps_error_callback eh_cb(const jroot* r)
{
    return r->foreign ? tr_error : tr_host_error;
}

static void tr_cancel(FutoInAsyncSteps* bsi, void* data)
{
    jfrag* f = data;
    jsenv* e = tl_env;
    napi_env env = e->env;
    napi_handle_scope hs;
    if (napi_open_handle_scope(env, &hs) != napi_ok) {
        return;
    }
    napi_value argv[5];
    if (!f->root->gone && root_arg(e, f->root, &argv[0]) == 0) {
        uint32_t s = jh_alloc(e, bsi, f->root, HK_STEP);
        if (s) {
            jh_new_id(e, s, &argv[1]);
            napi_create_uint32(env, f->k, &argv[2]);
            /* an error from C unwinds (a Timeout): the state shows it there
             * already, as in futoin-asyncsteps */
            const char* code = futoin_steps_unwinding(bsi);
            const char* info = code ? error_info_of(bsi) : NULL;
            size_t argc = 3;
            if (code && (err_fresh(e, bsi) || !jerr_same(f->root, code, info))) {
                error_values(env, f->root, code, info, &argv[3]);
                argc = 5;
            } else if (code) {
                napi_get_boolean(env, true, &argv[3]); /* unwinds the error JS has */
                argc = 4;
            }
            call_js(e, e->f_cancel, NULL, argc, argv);
            e->sh[SH_ERR_FRESH] = 0;
            if (e->sh[SH_OPS_N]) {
                js_flush_ops(e);
            }
            jh_free(e, s);
        }
    }
    napi_close_handle_scope(env, hs);
}

/* ---- roots ---- */

static void root_strong(jroot* r, int on)
{
    uint32_t cnt;
    if (on) {
        napi_reference_ref(r->e->env, r->obj, &cnt);
    } else {
        napi_reference_unref(r->e->env, r->obj, &cnt);
    }
}

/* e->run: the roots sweep() looks at */
static void run_link(jsenv* e, jroot* r)
{
    if (r->in_run || r->foreign || r->test) {
        return;
    }
    r->in_run = 1;
    r->run_prev = NULL;
    r->run_next = e->run;
    if (e->run) {
        e->run->run_prev = r;
    }
    e->run = r;
}

static void run_unlink(jsenv* e, jroot* r)
{
    if (!r->in_run) {
        return;
    }
    r->in_run = 0;
    if (r->run_prev) {
        r->run_prev->run_next = r->run_next;
    } else {
        e->run = r->run_next;
    }
    if (r->run_next) {
        r->run_next->run_prev = r->run_prev;
    }
    r->run_prev = r->run_next = NULL;
}

/* V8 does not see a flow's C memory (its root, steps, strands): told of it
 * in units of ROOT_EXT_STEP roots, it schedules major collections as flows
 * pile up, and abandoned ones (src sweep(), lib/AsyncSteps.js) go with them
 * instead of only when the JS heap is large */
#define ROOT_EXT_STEP 1024
#define ROOT_EXT_BYTES 1536 /* about a flow's share of C memory */
#define JBUF_KEEP 256       /* a pooled root keeps an error buffer up to this size */

static inline void roots_told(jsenv* e)
{
    int64_t change = 0;
    if (e->live_roots >= (e->ext_units + 1) * ROOT_EXT_STEP) {
        ++e->ext_units;
        change = ROOT_EXT_STEP * ROOT_EXT_BYTES;
    } else if (e->ext_units > 1 && e->live_roots < (e->ext_units - 1) * ROOT_EXT_STEP) {
        --e->ext_units; /* a unit below: a count going up and down by one tells nothing */
        change = -ROOT_EXT_STEP * ROOT_EXT_BYTES;
    }
    if (change && !e->gone) {
        int64_t total;
        napi_adjust_external_memory(e->env, change, &total);
    }
}

void jroot_free(jroot* r)
{
    free(r->jbuf);
    free(r);
}

/* the jroot lives as long as the C root: frags and cancel handlers of a
 * flow being torn down still read it */
static void root_release(void* p)
{
    jroot* r = *(jroot**)p;
    jsenv* e = r->e;
    --e->live_roots;
    roots_told(e);
    run_unlink(e, r);
    if (e->gone) {
        jroot_free(r); /* finalized after the environment's cleanup hook freed the pool */
        return;
    }
    if (r->jcap > JBUF_KEEP) {
        free(r->jbuf);
        r->jbuf = NULL;
        r->jcap = 0;
    }
    /* kept for the next flow, as the engine keeps its flows: thousands of
     * flows at once would else cost a calloc() and free() each */
    r->next_free = e->free_roots;
    e->free_roots = r;
}

void js_roots_pool_free(jsenv* e)
{
    for (jroot* r = e->free_roots; r;) {
        jroot* next = r->next_free;
        jroot_free(r);
        r = next;
    }
    e->free_roots = NULL;
}

static jroot* root_new(jsenv* e, int test)
{
    jroot* r = e->free_roots;
    if (r) {
        e->free_roots = r->next_free;
        char* jbuf = r->jbuf; /* a flow that fails allocates no buffer again */
        size_t jcap = r->jcap;
        memset(r, 0, sizeof(*r));
        r->jbuf = jbuf;
        r->jcap = jcap;
    } else {
        r = calloc(1, sizeof(jroot));
        if (!r) {
            return NULL;
        }
    }
    r->e = e;
    r->test = (uint8_t)test;
    r->tool = test ? e->test_tool : e->tool;
    r->bsi = futoin_steps_new(r->tool);
    r->slot = r->bsi ? jh_alloc(e, r->bsi, r, HK_ROOT) : 0;
    if (!r->slot) {
        if (r->bsi) {
            r->bsi->api->free(r->bsi);
        }
        jroot_free(r);
        return NULL;
    }
    futoin_steps_set_host_data(r->bsi, r); /* its SH_OWNER: owner_of() */
    jroot** keep = r->bsi->api->stack(r->bsi, sizeof(jroot*), root_release);
    if (!keep) {
        jh_free(e, r->slot);
        r->bsi->api->free(r->bsi);
        jroot_free(r);
        return NULL;
    }
    *keep = r;
    ++e->live_roots;
    roots_told(e);
    return r;
}

/* the flow is over: JS drops the root from its running set when it next
 * looks (SH_FIN), the C root goes (the engine defers that while inside) */
static void root_end(jroot* r)
{
    jsenv* e = r->e;
    if (r->running) {
        fin_list(e, (int32_t)r->slot, (int32_t)e->slots[r->slot].gen);
    }
    r->running = 0;
    run_unlink(e, r);
    if (e->slots[r->slot].root == r) {
        jh_free(e, r->slot);
    }
    FutoInAsyncSteps* bsi = r->bsi;
    r->bsi = NULL;
    if (bsi) {
        bsi->api->free(bsi); /* frees r through root_release */
    }
}

static void tr_done(FutoInAsyncSteps* root, void* data)
{
    (void)root;
    root_end(data);
}

static void tr_unhandled(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    jroot* r = data;
    jsenv* e = tl_env;
    napi_env env = e->env;
    napi_handle_scope hs;
    /* JS raised it and has its state already: nothing to tell unless a
     * promise() waits, it came out of a parallel branch (a new Error), or it
     * is a break()/continue() no loop took (its cancel handlers on the way
     * cleared the state for the loop) */
    const char* info = error_info_of(bsi);
    const int fresh = err_fresh(e, bsi);
    int told = !fresh && jerr_same(r, code, info) && !r->finish && strcmp(code, FUTOIN_ERR_LOOP_BREAK) != 0
               && strcmp(code, FUTOIN_ERR_LOOP_CONT) != 0;
    if (r->running && !told && napi_open_handle_scope(env, &hs) == napi_ok) {
        napi_value argv[3];
        if (root_arg(e, r, &argv[0]) == 0) {
            error_values(env, r, code, info, &argv[1]);
            call_js(e, e->f_finish, NULL, 3, argv);
        }
        napi_close_handle_scope(env, hs);
    }
    e->sh[SH_ERR_FRESH] = 0;
    root_end(r);
}

/* ---- queued operations of a step callback ---- */

void js_flush_ops(jsenv* e)
{
    int32_t* sh = e->sh;
    int32_t n = sh[SH_OPS_N];
    sh[SH_OPS_N] = 0;
    sh[SH_NUM_N] = 0;
    FutoInAsyncSteps* t = NULL;
    FutoInAsyncSteps* par = NULL;
    jroot* r = NULL;
    for (int32_t i = 0; i + 2 < n; i += 3) {
        int32_t op = sh[SH_OPS + i], a = sh[SH_OPS + i + 1], b = sh[SH_OPS + i + 2];
        if (op == OP_TARGET) {
            uint32_t s = (uint32_t)a;
            hslot* h = s < e->nslots ? &e->slots[s] : NULL;
            if (h && h->gen == (uint32_t)b && h->kind != HK_FREE) {
                t = h->bsi;
                r = h->root;
                jr_touch(e, r);
            } else {
                t = NULL; /* a step that ended meanwhile: its operations are dropped */
            }
            par = NULL;
            continue;
        }
        if (!t) {
            continue;
        }
        switch (op) {
        case OP_ADD:
        case OP_PADD: {
            FutoInAsyncSteps* to = op == OP_PADD ? par : t;
            jfrag* f;
            if (to && !r->foreign && futoin_steps_is_native(to)) {
                /* the step keeps its frag itself */
                f = frag_init(futoin_tool_host_add(to, (b & 1) ? eh_cb(r) : NULL), r, (uint32_t)a);
                if (f) {
                    f->own = 1;
                }
            } else if ((f = to ? jr_frag(t, r, (uint32_t)a) : NULL)) {
                to->api->add(to, f, step_cb(r), (b & 1) ? eh_cb(r) : NULL);
            }
            if (f) {
                f->no_eh = !(b & 1);
                f->batch = (b & OP_BATCH) != 0;
            } else {
                release_k(e, (uint32_t)a);
            }
            break;
        }
        case OP_PAR: {
            jfrag* f = jr_frag(t, r, (uint32_t)a);
            par = f ? t->api->parallel(t, f, b ? eh_cb(r) : NULL) : NULL;
            if (!f) {
                release_k(e, (uint32_t)a);
            }
            break;
        }
        case OP_WAIT:
            t->api->waitExternal(t);
            break;
        case OP_TIMEOUT:
            t->api->setTimeout(t, (uint32_t)a);
            break;
        case OP_SUCCESS: {
            /* success() of a step with 1..4 numbers: no JS values to convert */
            const double* nums = (const double*)(void*)(sh + SH_NUM);
            FutoInArgs args;
            jv_zero_args(&args);
            for (int32_t j = 0; j < a && j < 4 && b + j < SH_NUM_CAP; ++j) {
                jv_number(nums[b + j], &args.args[j]);
            }
            t->api->success(t, &args);
            break;
        }
        case OP_SYNC: {
            FutoInSync* s = js_sync_by_id(e, (uint32_t)a);
            uint32_t k = (uint32_t)b & ~1u;
            jfrag* f = s ? jr_frag(t, r, k) : NULL;
            if (f) {
                t->api->addSync(t, s, f, step_cb(r), (b & 1) ? eh_cb(r) : NULL);
            } else {
                release_k(e, k);
            }
            break;
        }
        case OP_FOLLOW: {
            /* the step taken, t, stays the engine's step: k goes after it */
            jfrag* f = frag_init(futoin_tool_host_follow(t), r, (uint32_t)a);
            if (f) {
                f->own = 1;
                f->no_eh = 1;
                f->batch = (b & OP_BATCH) != 0;
            } else {
                release_k(e, (uint32_t)a);
                t->api->handle_error(t, FUTOIN_ERR_INTERNAL_ERROR, "cannot queue the rest of a batch of steps");
            }
            break;
        }
        case OP_CANCEL: {
            jfrag* f = jr_frag(t, r, (uint32_t)a);
            if (f) {
                t->api->setCancel(t, f, tr_cancel);
            } else {
                release_k(e, (uint32_t)a);
            }
            break;
        }
        default:
            break;
        }
    }
}

/* ---- natives on handles ---- */

#define GET_ARGS(N)                                                                                \
    jsenv* e = tl_env;                                                                             \
    size_t argc = (N);                                                                             \
    napi_value argv[(N) > 0 ? (N) : 1];                                                            \
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {                        \
        return NULL;                                                                               \
    }                                                                                              \
    ++e->sh[SH_TOUCH];                                                                             \
    if (e->sh[SH_OPS_N]) {                                                                         \
        js_flush_ops(e);                                                                           \
    }

static hslot* handle_or_throw(napi_env env, jsenv* e, napi_value v, int kinds)
{
    hslot* h = jh_get(e, v, kinds);
    if (!h) {
        napi_throw_error(env, NULL, k_stale);
    }
    return h;
}

/* NULL (with an InternalError thrown) for a root-level add while the root
 * runs, as the JS library's sanity check */
static FutoInAsyncSteps* target_of(napi_env env, hslot* h)
{
    if (h->kind == HK_ROOT && h->root->running && !h->root->e->production && !futoin_steps_at_top(h->bsi)) {
        js_throw_error(env, "InternalError", "Top level add in execution");
        return NULL;
    }
    return h->bsi;
}

static int bool_arg(napi_env env, napi_value v)
{
    bool b = false;
    napi_get_value_bool(env, v, &b);
    return b;
}

static uint32_t k_arg(napi_env env, napi_value v)
{
    uint32_t k = 0;
    napi_get_value_uint32(env, v, &k);
    return k;
}

/* flush(): apply the queued operations now */
static napi_value n_flush(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    return NULL;
}

/* drainSpill() -> Int32Array of the indices released beyond the shared area */
static napi_value n_drain_spill(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    e->sh[SH_SPILL] = 0;
    return ivec_take(env, &e->spill);
}

/* drainFinSpill() -> Int32Array of (slot, gen) pairs past SH_FIN */
static napi_value n_drain_fin_spill(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    e->sh[SH_FIN_MORE] = 0;
    return ivec_take(env, &e->fin_spill);
}

/* the target of an adding call and a callback record on it for index k;
 * NULL after throwing */
static jfrag* frag_for(napi_env env, jsenv* e, napi_value hv, napi_value kv, FutoInAsyncSteps** bsi,
                       const char* what)
{
    hslot* h = handle_or_throw(env, e, hv, KINDS_ADD);
    if (!h) {
        return NULL;
    }
    jroot* r = h->root;
    *bsi = target_of(env, h);
    if (!*bsi) {
        return NULL;
    }
    jfrag* f = jr_frag(*bsi, r, k_arg(env, kv));
    if (!f) {
        js_throw_error(env, "InternalError", what);
    }
    return f;
}

/* add(h, k, hasOnerror) */
static napi_value n_add(napi_env env, napi_callback_info info)
{
    GET_ARGS(3);
    FutoInAsyncSteps* bsi;
    jfrag* f = frag_for(env, e, argv[0], argv[1], &bsi, "add() on a completed step");
    if (!f) {
        return NULL;
    }
    bsi->api->add(bsi, f, step_cb(f->root), bool_arg(env, argv[2]) ? eh_cb(f->root) : NULL);
    return NULL;
}

/* parallel(h, k, hasOnerror) -> parallel handle */
static napi_value n_parallel(napi_env env, napi_callback_info info)
{
    GET_ARGS(3);
    FutoInAsyncSteps* bsi;
    jfrag* f = frag_for(env, e, argv[0], argv[1], &bsi, "parallel() on a completed step");
    if (!f) {
        return NULL;
    }
    jroot* r = f->root;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, f, bool_arg(env, argv[2]) ? eh_cb(f->root) : NULL);
    if (!p) {
        return js_throw_error(env, "InternalError", "parallel() was refused");
    }
    uint32_t s = jh_alloc_step(e, p, r, HK_PARALLEL);
    if (!s) {
        return js_throw_error(env, "InternalError", "too many handles");
    }
    /* the parallel object is usable while its owner lives */
    keep_slot(e, bsi, s);
    napi_value out;
    NAPI_OK(jh_new_id(e, s, &out));
    return out;
}

/* ---- the burst owner (futoin-asyncsteps' g_burst_owner) ----
 * SH_OWNER holds the root handle of the flow that owns it (0: none; a
 * handle, not a slot: a root made later in the same slot is another one),
 * SH_OWNER_BR the key of its parallel branch (futoin_steps_branch_key()),
 * 0 for its main sequence. The core sets them when a strand goes on from an
 * event of its own; JS gives them back after execute() and sets them in
 * promise(). */
static int32_t owner_of(jsenv* e, FutoInAsyncSteps* root)
{
    const jroot* r = futoin_steps_host_data(root);
    return r ? (int32_t)(e->slots[r->slot].gen << JH_SLOT_BITS | r->slot) : 0;
}

static void burst_takes(void* ctx, FutoInAsyncSteps* root, uint32_t branch)
{
    jsenv* e = ctx;
    e->sh[SH_OWNER] = owner_of(e, root);
    e->sh[SH_OWNER_BR] = (int32_t)branch;
}

/* a step timeout, an error or a completion from outside on the strand
 * `branch` of root: whether it goes on inside that call */
static int owns_burst(void* ctx, FutoInAsyncSteps* root, uint32_t branch)
{
    jsenv* e = ctx;
    const int32_t k = owner_of(e, root);
    return k != 0 && e->sh[SH_OWNER] == k && e->sh[SH_OWNER_BR] == (int32_t)branch;
}

static int step_owns_burst(jsenv* e, const hslot* h)
{
    return h->root && h->root->bsi && owns_burst(e, h->root->bsi, futoin_steps_branch_key(h->bsi));
}

/* success(h, n, a0, a1, a2, a3): n > 4 -> a0 is an array of the values;
 * n | SUCCESS_OUTSIDE: called from outside the step's callback */
static napi_value n_success(napi_env env, napi_callback_info info)
{
    GET_ARGS(6);
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_STEP);
    if (!h) {
        return NULL;
    }
    FutoInAsyncSteps* bsi = h->bsi;
    int32_t n = 0;
    napi_get_value_int32(env, argv[1], &n);
    const int outside = (n & SUCCESS_OUTSIDE) != 0;
    n &= ~SUCCESS_OUTSIDE;
    /* under AsyncToolTest, the last step of a flow completed from an event:
     * the flow ends in this call, no event left, as futoin-asyncsteps */
    jroot* ends = outside && h->root && h->root->test && !h->root->foreign && futoin_steps_only_ends_flow(bsi)
                      ? h->root
                      : NULL;
    FutoInArgs a;
    if (n > 0) {
        if (jv_args_from_js(env, (size_t)n, &argv[2], &a) != 0) {
            return js_throw_error(env, "InternalError", "cannot pass these values");
        }
        bsi->api->success(bsi, &a);
        for (int i = 0; i < 4; ++i) {
            futoin_reset_binval(&a.args[i]); /* moved: a no-op unless refused */
        }
    } else {
        bsi->api->success(bsi, NULL);
    }
    if (outside) {
        if (!step_owns_burst(e, h)) {
            /* its callback runs still (a flow executed there completed it),
             * and its flow does not own the burst: the rest in a later event,
             * as futoin-asyncsteps' callImmediate() (no-op for a waiting step) */
            futoin_steps_defer_after(bsi);
        }
        e->sh[SH_TICKET] = (int32_t)futoin_steps_owed(bsi); /* JS's setImmediate() for it */
        if (ends && futoin_steps_execute_owed(ends->bsi, (uint32_t)e->sh[SH_TICKET])) {
            e->sh[SH_TICKET] = 0;
        }
    }
    return NULL;
}

/* error(h, code, info) */
static napi_value n_error(napi_env env, napi_callback_info info)
{
    GET_ARGS(3);
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_STEP | (1 << HK_ROOT) | (1 << HK_PARALLEL));
    if (!h) {
        return NULL;
    }
    char* code = js_strdup(env, argv[1]);
    char* inf = js_strdup(env, argv[2]);
    if (h->root) {
        jerr_set(h->root, code, inf); /* JS set _jsErr and _jsInfo to them */
    }
    h->bsi->api->handle_error(h->bsi, code ? code : "", inf);
    free(code);
    free(inf);
    return NULL;
}

static napi_value n_set_timeout(napi_env env, napi_callback_info info)
{
    GET_ARGS(2);
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_STEP);
    if (!h) {
        return NULL;
    }
    double ms = 0;
    napi_get_value_double(env, argv[1], &ms);
    if (!(ms >= 0)) {
        ms = 0;
    } else if (ms > (double)UINT32_MAX) {
        ms = (double)UINT32_MAX;
    }
    h->bsi->api->setTimeout(h->bsi, (uint32_t)ms);
    return NULL;
}

/* setCancel(h, k) */
static napi_value n_set_cancel(napi_env env, napi_callback_info info)
{
    GET_ARGS(2);
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_STEP);
    if (!h) {
        return NULL;
    }
    jfrag* f = jr_frag(h->bsi, h->root, k_arg(env, argv[1]));
    if (!f) {
        return js_throw_error(env, "InternalError", "setCancel() on a completed step");
    }
    h->bsi->api->setCancel(h->bsi, f, tr_cancel);
    return NULL;
}

static napi_value n_wait_external(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_STEP);
    if (h) {
        h->bsi->api->waitExternal(h->bsi);
    }
    return NULL;
}

/* loop(h, k, label); repeat(h, k, count, label) */
static napi_value n_loop(napi_env env, napi_callback_info info)
{
    GET_ARGS(3);
    FutoInAsyncSteps* bsi;
    jfrag* f = frag_for(env, e, argv[0], argv[1], &bsi, "loop() on a completed step");
    if (!f) {
        return NULL;
    }
    char* label = js_strdup(env, argv[2]);
    bsi->api->loop(bsi, f, f->root->foreign ? tr_loop : tr_host_loop, label);
    free(label);
    return NULL;
}

static napi_value n_repeat(napi_env env, napi_callback_info info)
{
    GET_ARGS(4);
    double count = 0;
    napi_get_value_double(env, argv[2], &count);
    /* JS runs the body while i < count: 2.5 is 3; Infinity, beyond size_t, is endless */
    size_t n = 0;
    if (count >= 18446744073709551616.0) {
        n = SIZE_MAX;
    } else if (count > 0) {
        n = (size_t)count;
        n += (double)n < count;
    }
    FutoInAsyncSteps* bsi;
    jfrag* f = frag_for(env, e, argv[0], argv[1], &bsi, "repeat() on a completed step");
    if (!f) {
        return NULL;
    }
    char* label = js_strdup(env, argv[3]);
    bsi->api->repeat(bsi, f, n, f->root->foreign ? tr_repeat : tr_host_repeat, label);
    free(label);
    return NULL;
}

static napi_value loop_ctl(napi_env env, napi_callback_info info, int brk)
{
    GET_ARGS(2);
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_STEP);
    if (!h) {
        return NULL;
    }
    char* label = js_strdup(env, argv[1]);
    if (brk) {
        h->bsi->api->breakLoop(h->bsi, label);
    } else {
        h->bsi->api->continueLoop(h->bsi, label);
    }
    free(label);
    return NULL;
}

static napi_value n_break(napi_env env, napi_callback_info info)
{
    return loop_ctl(env, info, 1);
}

static napi_value n_continue(napi_env env, napi_callback_info info)
{
    return loop_ctl(env, info, 0);
}

/* ---- host steps ---- */

/* the next plain JS step to run, or 0: its code as onStep's; SH_H its
 * handle, SH_ROOT its root's slot; its values in the array given to init */
static int32_t host_take(jsenv* e, FutoInAsyncTool* t, jroot* only)
{
    napi_env env = e->env;
    void* data;
    const FutoInArgs* args;
    FutoInAsyncSteps* bsi;
    jfrag* f;
    uint32_t s;
    for (;;) {
        bsi = only ? futoin_tool_host_next_of(only->bsi, &data, &args) : futoin_tool_host_next(t, &data, &args);
        if (!bsi) {
            return 0;
        }
        f = data;
        s = futoin_tool_host_kind(bsi, NULL) == FUTOIN_HOST_ERROR ? jh_alloc(e, bsi, f->root, HK_STEP)
                                                                  : jh_alloc_step(e, bsi, f->root, HK_STEP);
        if (s) {
            break;
        }
        /* the handle table is full: the step fails, the next one is tried */
        bsi->api->handle_error(bsi, FUTOIN_ERR_INTERNAL_ERROR, "too many active steps");
        futoin_tool_host_done(bsi);
    }
    e->slots[s].frag = f;
    ++e->turn_steps;
    e->sh[SH_H] = (int32_t)(e->slots[s].gen << JH_SLOT_BITS | s);
    e->sh[SH_ROOT] = (int32_t)f->root->slot;
    int n = 0;
    size_t iter = 0;
    int mode = futoin_tool_host_kind(bsi, &iter);
    uint32_t k = f->k;
    /* a step without error handler runs once: JS frees its index at once
     * (no release through the frame's cleanup and the freed list) */
    e->sh[SH_K_OWN] = mode == FUTOIN_HOST_STEP && f->no_eh;
    if (mode == FUTOIN_HOST_STEP) {
        /* for a batch, or sub-steps JS runs as part of it (mergeInner; a
         * loop body, hot, goes by JS's own count of the burst) */
        e->sh[SH_BUDGET] = (int32_t)futoin_tool_host_budget(bsi);
        if (f->no_eh) {
            f->k = JK_NONE;
        }
    }
    if (mode != FUTOIN_HOST_ERROR) {
        f->root->jerr = 0; /* onStep clears _jsErr */
    }
    if (mode == FUTOIN_HOST_REPEAT || mode == FUTOIN_HOST_LOOP) {
        /* the iterations JS may run as part of this body (runIters) */
        e->sh[SH_BUDGET] = (int32_t)futoin_tool_host_loop_room(bsi);
    }
    if (mode == FUTOIN_HOST_REPEAT) {
        /* the iteration: in SH_ITER, or in hostArgs[0] past int32 */
        n = 1;
        if (iter <= INT32_MAX) {
            e->sh[SH_ITER] = (int32_t)iter;
        } else {
            napi_value arr, v;
            e->sh[SH_ITER] = -1;
            if (napi_get_reference_value(env, e->host_args, &arr) == napi_ok && arr
                    && napi_create_double(env, (double)iter, &v) == napi_ok) {
                napi_set_element(env, arr, 0, v);
            }
        }
    } else if (mode == FUTOIN_HOST_ERROR) {
        /* hostArgs[0], [1]: the code and error_info, unless JS has them */
        napi_value arr, v[2];
        const char* code = futoin_tool_host_error(bsi);
        const char* info = error_info_of(bsi);
        n = JS_CODE_SAME - 1;
        if (err_fresh(e, bsi) || !jerr_same(f->root, code, info)) {
            n = 2;
            if (napi_get_reference_value(env, e->host_args, &arr) == napi_ok && arr) {
                error_values(env, f->root, code, info, v);
                napi_set_element(env, arr, 0, v[0]);
                napi_set_element(env, arr, 1, v[1]);
            }
        }
    } else if (args->arg0.type && !args->arg1.type && jv_as_number(&args->arg0, (double*)(void*)(e->sh + SH_NUM))) {
        n = JS_CODE_NUM1 - 1; /* one number, handed over in shared memory */
    } else if (args->arg0.type) {
        napi_value vals[4], arr;
        n = jv_from_args(env, args, vals);
        if (n < 0) {
            n = -1;
        }
        if (napi_get_reference_value(env, e->host_args, &arr) == napi_ok && arr) {
            for (int j = 0; j < (n < 0 ? 1 : n); ++j) {
                napi_value u;
                if (!vals[j]) {
                    napi_get_undefined(env, &u);
                    vals[j] = u;
                }
                napi_set_element(env, arr, (uint32_t)j, vals[j]);
            }
        }
    }
    return (int32_t)(k * 32 + (uint32_t)(mode > 0 ? mode : 0) * 8 + (uint32_t)(n + 1));
}

/* root r still holds the slot it had when its flow ran (slot, gen); r may
 * be gone: its slot, freed before it, tells */
static int root_live(jsenv* e, jroot* r, uint32_t slot, uint32_t gen)
{
    const hslot* rs = &e->slots[slot];
    return rs->kind == HK_ROOT && rs->gen == gen && rs->root == r;
}

/* host_take() for the flow of r alone, 0 when that flow ended meanwhile */
static int32_t host_take_live(jsenv* e, FutoInAsyncTool* t, jroot* r, uint32_t slot, uint32_t gen)
{
    return root_live(e, r, slot, gen) ? host_take(e, t, r) : 0;
}

/* host_take_live(), errors_only: only an error handler; the step after the
 * handlers of an error raised from outside waits for a turn of its own, as
 * after any completion from outside */
static int32_t host_take_next(jsenv* e, FutoInAsyncTool* t, jroot* r, uint32_t slot, uint32_t gen, int errors_only)
{
    if (errors_only && (!root_live(e, r, slot, gen) || futoin_tool_host_peek_of(r->bsi) != FUTOIN_HOST_ERROR)) {
        if (t == e->tool && futoin_tool_host_pending(t)) {
            jd_arm_ready(e);
        }
        return 0;
    }
    return host_take_live(e, t, r, slot, gen);
}

/* hostNext(): SH_HOST_IN holds JS_HOST_TEST for the test tool; the code of
 * the next JS step to run (0: none) comes back in SH_HOST_OUT. Arguments
 * and results go through shared memory: this is paid once per step. */
static napi_value n_host_next(napi_env env, napi_callback_info info)
{
    (void)env;
    (void)info;
    jsenv* e = tl_env;
    if (e->sh[SH_OPS_N]) {
        js_flush_ops(e);
    }
    int32_t in = e->sh[SH_HOST_IN];
    e->sh[SH_HOST_OUT] = host_take(e, (in & JS_HOST_TEST) ? e->test_tool : e->tool, NULL);
    return NULL;
}

/* work of the real scheduler other than the flow JS just ran is ready now
 * (a flow it let into a Mutex): JS runs a turn for it (SH_MORE). A timer
 * that is due is not: it fires in a timers phase, as Node's own do, and a
 * turn queued now would take flows resumed later ahead of the setImmediate()
 * callbacks queued before them */
static int32_t other_ready(jsenv* e, FutoInAsyncTool* t)
{
    return t == e->tool && (futoin_tool_host_pending(t) || futoin_tool_has_ready(t));
}

/* SH_MORE once the flow of r (slot, gen) ran from outside: other_ready(),
 * plus 2 when a branch error failed one of its parallel steps: JS runs the
 * handlers now (the reference does, inside that call), the steps after
 * them later; plus 4 when the flow itself goes on later (a strand queued
 * that no event is on its way for yet: JS claims one, claimQueued()) */
static int32_t more_after(jsenv* e, FutoInAsyncTool* t, jroot* r, uint32_t slot, uint32_t gen)
{
    const int live = root_live(e, r, slot, gen);
    const int32_t par = live && futoin_steps_parallel_failed(r->bsi) ? 2 : 0;
    const int32_t own = live && futoin_steps_has_queued(r->bsi) ? 4 : 0;
    return other_ready(e, t) | par | own;
}

/* hostDone(): the step SH_H ran and did SH_HOST_IN's JS_F_* (with
 * JS_HOST_TEST, JS_HOST_TAKE); the engine goes on with its flow at once and,
 * with JS_HOST_TAKE, the code of the next JS step comes back in SH_HOST_OUT */
static napi_value n_host_done(napi_env env, napi_callback_info info)
{
    (void)env;
    (void)info;
    jsenv* e = tl_env;
    if (e->sh[SH_OPS_N]) {
        js_flush_ops(e);
    }
    int32_t id = e->sh[SH_H];
    int32_t flags = e->sh[SH_HOST_IN];
    uint32_t s = (uint32_t)id & (JH_SLOTS - 1);
    jroot* only = NULL; /* JS_HOST_NESTED: the flow of this step */
    uint32_t only_slot = 0, only_gen = 0;
    if (s && s < e->nslots && e->slots[s].kind == HK_STEP && (uint32_t)id == (e->slots[s].gen << JH_SLOT_BITS | s)) {
        FutoInAsyncSteps* bsi = e->slots[s].bsi;
        if (flags & JS_HOST_NESTED) {
            only = e->slots[s].root;
            only_slot = only->slot;
            only_gen = e->slots[only_slot].gen;
        }
        if ((flags & JS_F_DONE) || !(flags & (JS_F_ADDED | JS_F_WAIT))) {
            jh_free(e, s);
        } else {
            keep_slot(e, bsi, s);
        }
        if (flags & JS_F_ITERS) {
            futoin_tool_host_loop_ran(bsi, (uint32_t)e->sh[SH_ITER]);
            e->turn_steps += (uint32_t)e->sh[SH_ITER];
        }
        if (flags & JS_F_BATCH) {
            futoin_tool_host_spend(bsi, (uint32_t)e->sh[SH_BATCH]);
            e->turn_steps += (uint32_t)e->sh[SH_BATCH];
        }
        jlazy lz;
        lz_enter(e, &lz);
        if (flags & JS_HOST_ERRORS) {
            futoin_tool_host_done_unwinding(bsi); /* no step after the handlers */
        } else {
            futoin_tool_host_done(bsi);
        }
        lz_leave(e, &lz);
    }
    FutoInAsyncTool* t = (flags & JS_HOST_TEST) ? e->test_tool : e->tool;
    if (!(flags & JS_HOST_TAKE)) {
        if (t == e->tool && futoin_tool_host_pending(t)) {
            jd_arm_ready(e); /* the burst is over: the rest on the next turn */
        }
        e->sh[SH_HOST_OUT] = 0;
        return NULL;
    }
    if (flags & JS_HOST_NESTED) {
        if ((flags & JS_HOST_ERRORS) && only && root_live(e, only, only_slot, only_gen)
            && futoin_tool_host_peek_of(only->bsi) != FUTOIN_HOST_ERROR) {
            /* a handler that passed the error on may have failed a parallel:
             * its handler is next */
            jlazy lz;
            lz_enter(e, &lz);
            futoin_steps_unwind_now(only->bsi);
            lz_leave(e, &lz);
        }
        e->sh[SH_HOST_OUT] = only ? host_take_next(e, t, only, only_slot, only_gen, flags & JS_HOST_ERRORS) : 0;
        if (!e->sh[SH_HOST_OUT]) {
            if (flags & JS_HOST_MORE) {
                e->sh[SH_MORE] = (flags & JS_HOST_ERRORS) || !only ? other_ready(e, t)
                                                                  : more_after(e, t, only, only_slot, only_gen);
            }
            if (t == e->tool && futoin_tool_host_pending(t)) {
                jd_arm_ready(e); /* other flows' steps: on a turn of their own */
            }
        }
        return NULL;
    }
    e->sh[SH_HOST_OUT] = host_take(e, t, NULL);
    return NULL;
}

/* root r's flow goes on now, alone; its first JS step in SH_HOST_OUT
 * (errors_only: only what unwinds an error raised from outside, up to an
 * error handler) */
enum { NOW_STRAND, NOW_ERRORS, NOW_OWED, NOW_OWNER };

static int flow_now(jsenv* e, jroot* r, int mode, FutoInAsyncSteps* step, uint32_t ticket)
{
    FutoInAsyncTool* tool = r->tool;
    const uint32_t rslot = r->slot, rgen = e->slots[rslot].gen;
    const int errors_only = mode == NOW_ERRORS;
    jlazy lz;
    lz_enter(e, &lz);
    /* `step`: its strand, which may be a parallel branch's */
    int ran = errors_only         ? futoin_steps_unwind_now(r->bsi)
              : mode == NOW_OWED ? futoin_steps_execute_owed(r->bsi, ticket)
              : mode == NOW_OWNER ? owner_of(e, r->bsi) == e->sh[SH_OWNER]
                      && futoin_steps_execute_key(r->bsi, (uint32_t)e->sh[SH_OWNER_BR])
                                  : futoin_steps_execute_strand(step ? step : r->bsi);
    lz_leave(e, &lz);
    /* JS runs what it takes only when something ran: a step taken else
     * would hold the flow for good */
    e->sh[SH_HOST_OUT] = ran ? host_take_next(e, tool, r, rslot, rgen, errors_only) : 0;
    if (!ran && tool == e->tool && futoin_tool_host_pending(tool)) {
        jd_arm_ready(e);
    }
    return ran;
}

/* flowNow(h, errorsOnly, stepH) -> whether it ran: the flow of root h goes on
 * now, alone, when it is ready (the strand of step stepH if given) (an error() from outside runs its handlers
 * inside the call, as futoin-asyncsteps does: errorsOnly, no step after
 * them); not inside the scheduler's own callbacks. Its first JS step comes
 * back in SH_HOST_OUT as from execute() with JS_HOST_NESTED */
static napi_value flow_now_call(napi_env env, napi_callback_info info, int mode)
{
    GET_ARGS(3);
    bool errors_only = false;
    uint32_t ticket = 0;
    if (mode == NOW_STRAND) {
        napi_get_value_bool(env, argv[1], &errors_only);
    } else if (mode == NOW_OWED) {
        napi_get_value_uint32(env, argv[1], &ticket);
    }
    e->sh[SH_HOST_OUT] = 0;
    hslot* h = jh_get(e, argv[0], 1 << HK_ROOT);
    if (!h || !h->root->running) {
        return NULL;
    }
    hslot* step = mode == NOW_STRAND ? jh_get(e, argv[2], KINDS_STEP) : NULL;
    jroot* r = h->root;
    FutoInAsyncTool* tool = r->tool; /* the flow may end and its root go */
    const uint32_t rslot = r->slot, rgen = e->slots[rslot].gen;
    if (!errors_only) {
        futoin_steps_parallel_failed(r->bsi); /* more_after() tells of this run only */
    }
    const int ran = flow_now(e, r, errors_only ? NOW_ERRORS : mode, step && step->root == r ? step->bsi : NULL, ticket);
    e->sh[SH_MORE] = !ran ? 0 : errors_only ? other_ready(e, tool) : more_after(e, tool, r, rslot, rgen);
    napi_value out;
    NAPI_OK(napi_get_boolean(env, ran != 0, &out));
    return out;
}

static napi_value n_flow_now(napi_env env, napi_callback_info info)
{
    return flow_now_call(env, info, NOW_STRAND);
}

/* resumeNow(h, ticket) -> whether it ran: as flowNow(h), the strand of
 * root h's flow that the event of ticket is owed to (a completion from
 * outside, in its setImmediate(); futoin_steps_execute_owed()) */
static napi_value n_resume_now(napi_env env, napi_callback_info info)
{
    return flow_now_call(env, info, NOW_OWED);
}

/* ownerNow(h) -> whether it ran: as flowNow(h), the strand of root h's flow
 * that owns the burst (SH_OWNER, SH_OWNER_BR), when it is queued: after the
 * handlers of an error from outside on it */
static napi_value n_owner_now(napi_env env, napi_callback_info info)
{
    return flow_now_call(env, info, NOW_OWNER);
}

/* query(h's C root) for the running root h, false for any other handle */
static napi_value running_root_query(napi_env env, napi_callback_info info, int (*query)(FutoInAsyncSteps* root))
{
    GET_ARGS(1);
    js_flush_ops(e);
    hslot* h = jh_get(e, argv[0], 1 << HK_ROOT);
    napi_value out;
    NAPI_OK(napi_get_boolean(env, h != NULL && h->root->running && query(h->bsi), &out));
    return out;
}

/* claimQueued(h) -> the ticket of the event JS owes now to the strands of
 * the running root h's flow queued with none on its way yet, 0: none (a
 * failed parallel's handler added steps: futoin_steps_claim_queued()) */
static napi_value n_claim_queued(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    js_flush_ops(e);
    hslot* h = jh_get(e, argv[0], 1 << HK_ROOT);
    napi_value out;
    NAPI_OK(napi_create_uint32(env, h != NULL && h->root->running ? futoin_steps_claim_queued(h->bsi) : 0, &out));
    return out;
}

/* atTop(h) -> whether none of the steps of the running root h's flow is in
 * progress (futoin_steps_at_top(): a root add() appends to the flow then) */
static napi_value n_at_top(napi_env env, napi_callback_info info)
{
    return running_root_query(env, info, futoin_steps_at_top);
}

/* goesOnLater(h) -> whether the running root h's flow goes on only on a
 * later turn (futoin_steps_goes_on_later(): a root error() cancels it then) */
static napi_value n_goes_on_later(napi_env env, napi_callback_info info)
{
    return running_root_query(env, info, futoin_steps_goes_on_later);
}

/* finishDone(h) -> whether the running root h's flow ended now: all its
 * steps completed, the last by a success() from outside (drainFin() tells JS) */
static napi_value n_finish_done(napi_env env, napi_callback_info info)
{
    return running_root_query(env, info, futoin_steps_finish_done);
}

/* failWaiting(h, code, info, stepH) -> whether raised: error() on the
 * running root h fails its flow at the step it waits at, wherever that step
 * is (a C step, a sync object's queue), as futoin-asyncsteps' root error();
 * with stepH (a step of h whose sub-steps run), at the step its sequence
 * waits at, which may be a parallel branch's */
static napi_value n_fail_waiting(napi_env env, napi_callback_info info)
{
    GET_ARGS(4);
    hslot* h = jh_get(e, argv[0], 1 << HK_ROOT);
    hslot* step = jh_get(e, argv[3], KINDS_STEP);
    napi_value out;
    if (!h || !h->root->running || (step && step->root != h->root)) {
        NAPI_OK(napi_get_boolean(env, false, &out));
        return out;
    }
    char* code = js_strdup(env, argv[1]);
    char* inf = js_strdup(env, argv[2]);
    const int raised = futoin_steps_fail_waiting(step ? step->bsi : h->bsi, code ? code : "", inf);
    if (raised) {
        jerr_set(h->root, code, inf); /* JS sets _jsErr and _jsInfo to them */
    }
    free(code);
    free(inf);
    NAPI_OK(napi_get_boolean(env, raised != 0, &out));
    return out;
}

/* whether an await() may still complete `step`: it waits for an event
 * (a step of another provider alone can tell, as its success() does) */
static int step_waits(FutoInAsyncSteps* step)
{
    return !futoin_steps_is_native(step) || futoin_steps_is_waiting(step);
}

/* awaited(h, value, later) -> whether its flow ran: success(value) of the
 * step h that waits for a promise, then its flow goes on now, alone, as
 * flowNow() (false: not one of our running roots, or not its main sequence,
 * or `later`: a turn runs it) */
static napi_value n_awaited(napi_env env, napi_callback_info info)
{
    GET_ARGS(3);
    bool later = false; /* the flow goes on at a later turn (JS yields to the event loop) */
    napi_get_value_bool(env, argv[2], &later);
    e->sh[SH_HOST_OUT] = 0;
    e->sh[SH_TICKET] = 0;
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_STEP);
    if (!h) {
        return NULL;
    }
    FutoInArgs a;
    if (jv_args_from_js(env, 1, &argv[1], &a) != 0) {
        return js_throw_error(env, "InternalError", "cannot pass this value");
    }
    jroot* r = h->root;
    FutoInAsyncSteps* step = h->bsi;
    if (!step_waits(step)) {
        /* an error from outside moved the step on: the late result goes,
         * silently, as in the JS library */
        futoin_reset_binval(&a.args[0]);
        napi_value out;
        NAPI_OK(napi_get_boolean(env, false, &out));
        return out;
    }
    step->api->success(step, &a);
    futoin_reset_binval(&a.args[0]); /* moved: a no-op unless refused */
    FutoInAsyncTool* tool = r ? r->tool : NULL; /* the flow may end and its root go */
    const uint32_t rslot = r ? r->slot : 0, rgen = r ? e->slots[rslot].gen : 0;
    if (r) {
        futoin_steps_parallel_failed(r->bsi); /* more_after() tells of this run only */
    }
    /* later: the ticket of the strand's event, JS's setImmediate() for it */
    if (later) {
        e->sh[SH_TICKET] = (int32_t)futoin_steps_owed(step);
    }
    int ran = !later && r && !r->foreign && r->running && flow_now(e, r, NOW_STRAND, step, 0);
    e->sh[SH_MORE] = ran ? more_after(e, tool, r, rslot, rgen) : 0;
    napi_value out;
    NAPI_OK(napi_get_boolean(env, ran, &out));
    return out;
}

/* query(h's step) for a live step handle h, false for any other value */
static napi_value step_query(napi_env env, napi_callback_info info, int (*query)(FutoInAsyncSteps* step))
{
    GET_ARGS(1);
    hslot* h = jh_get(e, argv[0], KINDS_STEP);
    napi_value out;
    NAPI_OK(napi_get_boolean(env, h != NULL && query(h->bsi), &out));
    return out;
}

/* waiting(h) -> whether the step h waits for an event from outside (an
 * await() settling late finds it moved on by an error from outside) */
static napi_value n_waiting(napi_env env, napi_callback_info info)
{
    return step_query(env, info, step_waits);
}

/* readyNow() -> whether the real scheduler has work ready now (the step
 * after a parallel whose branches ended inside execute()) */
static napi_value n_ready_now(napi_env env, napi_callback_info info)
{
    (void)info;
    jsenv* e = tl_env;
    napi_value out;
    NAPI_OK(napi_get_boolean(env, other_ready(e, e->tool) != 0, &out));
    return out;
}

/* runsSubsteps(h) -> whether the step h runs sub-steps now (an error from
 * outside ran its handler, which added steps): nothing to complete there */
static napi_value n_runs_substeps(napi_env env, napi_callback_info info)
{
    return step_query(env, info, futoin_steps_runs_substeps);
}

/* inBranch(h) -> whether step h is of a parallel branch (futoin_steps_in_branch()) */
static napi_value n_in_branch(napi_env env, napi_callback_info info)
{
    return step_query(env, info, futoin_steps_in_branch);
}

/* rootNew(test) -> handle of a C root made before execute() (binary()) */
static napi_value n_root_new(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    jroot* r = root_new(e, bool_arg(env, argv[0]));
    if (!r) {
        return js_throw_error(env, "InternalError", "cannot create a root");
    }
    napi_value out;
    NAPI_OK(jh_new_id(e, r->slot, &out));
    return out;
}

/* rootFree(h): a root made by rootNew() and never executed */
static napi_value n_root_free(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    hslot* h = jh_get(e, argv[0], 1 << HK_ROOT);
    if (h && !h->root->running) {
        root_end(h->root);
    }
    return NULL;
}

/* execute(h|undefined, test, obj) -> handle: the queued root-level
 * operations (target slot 0) go to this root, then it runs its first burst
 * now, with `obj` as the JS root; SH_HOST_IN: JS_HOST_TAKE, JS_HOST_FINISH */
static napi_value n_execute(napi_env env, napi_callback_info info)
{
    jsenv* e = tl_env;
    size_t argc = 3;
    napi_value argv[3];
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
        return NULL;
    }
    /* JS_HOST_TAKE: JS drains now, so the first JS step comes back in
     * SH_HOST_OUT as from hostNext(), one call less per flow */
    ++e->sh[SH_TOUCH];
    const int32_t in = e->sh[SH_HOST_IN];
    const int take = (in & JS_HOST_TAKE) != 0;
    e->sh[SH_HOST_OUT] = 0;
    hslot* h = jh_get(e, argv[0], (1 << HK_ROOT) | (1 << HK_FOREIGN));
    if (h && h->kind == HK_FOREIGN) {
        js_flush_ops(e);
        h->bsi->api->execute(h->bsi, NULL, NULL);
        futoin_steps_execute_burst(h->bsi);
        return NULL;
    }
    jroot* r = h ? h->root : NULL;
    if (r && r->running) {
        js_flush_ops(e);
        return argv[0]; /* already running: as the JS library, nothing more */
    }
    if (!r) {
        r = root_new(e, bool_arg(env, argv[1]));
        if (!r) {
            e->sh[SH_OPS_N] = 0;
            return js_throw_error(env, "InternalError", "cannot create a root");
        }
    }
    /* slot 0 in OP_TARGET names the root being executed */
    hslot* z = &e->slots[0];
    z->bsi = r->bsi;
    z->root = r;
    z->kind = HK_ROOT;
    js_flush_ops(e);
    z->kind = HK_FREE;
    z->bsi = NULL;
    z->root = NULL;
    FutoInAsyncSteps* bsi = r->bsi;
    futoin_steps_set_done(bsi, tr_done, r);
    r->running = 1;
    run_link(e, r);
    r->jerr = 0; /* execute() clears _jsErr */
    r->finish = (in & JS_HOST_FINISH) != 0;
    napi_value out;
    NAPI_OK(jh_new_id(e, r->slot, &out));
    bsi->api->execute(bsi, r, tr_unhandled);
    uint32_t saved_slot = e->exec_slot;
    napi_value saved_obj = e->exec_obj;
    e->exec_slot = r->slot;
    e->exec_obj = argv[2];
    const int nested = (in & JS_HOST_NESTED) != 0;
    /* the flow may end in its burst and r go back to the allocator */
    FutoInAsyncTool* tool = r->tool;
    const uint32_t rslot = r->slot, rgen = e->slots[rslot].gen;
    jlazy lz;
    lz_enter(e, &lz);
    if (nested) {
        futoin_steps_execute_nested(bsi);
    } else {
        futoin_steps_execute_burst(bsi);
    }
    lz_leave(e, &lz);
    if (take) {
        /* JS knows the root by exec_obj still: a step failing here (a full
         * handle table) ends the flow, and its promise() hears of it */
        e->sh[SH_HOST_OUT] = nested ? host_take_live(e, tool, r, rslot, rgen) : host_take(e, tool, NULL);
    }
    e->exec_slot = saved_slot;
    e->exec_obj = saved_obj;
    return out;
}

static napi_value n_cancel(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    hslot* h = jh_get(e, argv[0], KINDS_ROOT);
    if (!h) {
        return NULL; /* finished already */
    }
    jroot* r = h->root;
    h->bsi->api->cancel(h->bsi);
    if (h->kind == HK_ROOT) {
        root_end(r);
    }
    return NULL;
}

/* ---- idle flows: held weakly by JS, gone with their JS root ---- */

/* sweep_k()'s list: the callback indices of `r` */
typedef struct sweep_ctx
{
    ivec* l;
    jroot* r;
} sweep_ctx;

static void sweep_k(void* ctx, void* data)
{
    sweep_ctx* c = ctx;
    const jfrag* f = data;
    if (f->root == c->r && f->k != JK_NONE) {
        ivec_push(c->l, (int32_t)f->k);
    }
}

/* sweep() -> [slot, gen, n, k1..kn, ...]: the running roots of the loop's
 * tool idle (futoin_steps_host_idle()) since the sweep before, untouched
 * meanwhile, become weak, each with the callback indices its flow keeps,
 * which JS moves into the root (held as weakly as the root then). A flow
 * idle for a moment, waiting for its next event, is only marked: holding
 * it weakly would cost more than it saves. */
static napi_value n_sweep(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    ivec b = {NULL, 0, 0, 0};
    sweep_ctx ctx = {&b, NULL};
    uint32_t cur = ++e->sweeps; /* 0 is "not seen", 1 none before the first */
    if (cur < 2) {
        cur = e->sweeps = 2;
    }
    jroot* next;
    for (jroot* r = e->run; r; r = next) {
        next = r->run_next;
        uint32_t s = r->slot;
        hslot* h = &e->slots[s];
        if (h->kind != HK_ROOT || h->root != r || !r->running || r->exported) {
            continue;
        }
        if (!futoin_steps_host_idle(r->bsi, tr_cancel, NULL, NULL)) {
            r->seen = 0;
            continue;
        }
        if (r->seen != cur - 1) {
            r->seen = cur; /* idle now: weak if it still is at the next sweep */
            continue;
        }
        uint32_t mark = b.n;
        ctx.r = r;
        ivec_push(&b, (int32_t)s);
        ivec_push(&b, (int32_t)h->gen);
        ivec_push(&b, 0);
        futoin_steps_host_idle(r->bsi, tr_cancel, sweep_k, &ctx); /* idle: checked above */
        if (b.oom) {
            b.n = mark; /* out of memory: it stays strong, and the sweep ends */
            break;
        }
        b.v[mark + 2] = (int32_t)(b.n - mark - 3);
        r->weak = 1;
        run_unlink(e, r);
    }
    napi_value out = ivec_take(env, &b);
    free(b.v);
    return out;
}

void jr_wake(jsenv* e, jroot* r)
{
    r->weak = 0;
    if (r->running) {
        run_link(e, r);
    }
    napi_env env = e->env;
    napi_handle_scope hs;
    if (napi_open_handle_scope(env, &hs) != napi_ok) {
        return;
    }
    napi_value fn, undef, arg, ret;
    if (napi_get_reference_value(env, e->f_wake, &fn) == napi_ok && fn && napi_get_undefined(env, &undef) == napi_ok
        && napi_create_uint32(env, r->slot, &arg) == napi_ok) {
        napi_call_function(env, undef, fn, 1, &arg, &ret);
    }
    napi_close_handle_scope(env, hs);
}

/* externalTold() -> the bytes of C memory V8 was told the live roots hold */
static napi_value n_external_told(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    napi_value r;
    napi_create_double(env, (double)e->ext_units * ROOT_EXT_STEP * ROOT_EXT_BYTES, &r);
    return r;
}

/* abandon(h): the JS root of the weak root h was collected: nothing can
 * move its flow on any more; it ends without JS (C cancel handlers run) */
static napi_value n_abandon(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    int32_t id;
    if (napi_get_value_int32(env, argv[0], &id) != napi_ok || id <= 0) {
        return NULL;
    }
    uint32_t s = (uint32_t)id & (JH_SLOTS - 1);
    if (s >= e->nslots) {
        return NULL;
    }
    hslot* h = &e->slots[s];
    jroot* r = h->root;
    if (h->kind != HK_ROOT || h->gen != (uint32_t)id >> JH_SLOT_BITS || !r || !r->weak) {
        return NULL; /* woken meanwhile, or gone */
    }
    r->weak = 0;
    r->gone = 1;
    r->running = 0; /* JS forgot it already (sweepIdle): not listed as finished */
    h->bsi->api->cancel(h->bsi);
    root_end(r);
    return NULL;
}

/* sync(h, syncObject, k, hasOnerror) */
static napi_value n_sync(napi_env env, napi_callback_info info)
{
    GET_ARGS(4);
    FutoInSync* s = js_sync_of(env, argv[1]);
    if (!s) {
        return js_throw_type(env, "sync object expected");
    }
    FutoInAsyncSteps* bsi;
    jfrag* f = frag_for(env, e, argv[0], argv[2], &bsi, "sync() on a completed step");
    if (!f) {
        return NULL;
    }
    bsi->api->addSync(bsi, s, f, step_cb(f->root), bool_arg(env, argv[3]) ? eh_cb(f->root) : NULL);
    return NULL;
}

static napi_value n_valid(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    napi_value r;
    napi_get_boolean(env, jh_get(e, argv[0], KINDS_ADD) != NULL, &r);
    return r;
}

/* loopRan(h, k): the loop body h ran k more iterations of its loop before
 * what it does now (a throw of a later one: break, continue, an error) */
static napi_value n_loop_ran(napi_env env, napi_callback_info info)
{
    GET_ARGS(2);
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_STEP);
    if (!h) {
        return NULL;
    }
    uint32_t k = 0;
    napi_get_value_uint32(env, argv[1], &k);
    futoin_tool_host_loop_ran(h->bsi, k);
    return NULL;
}

/* isTop(h): h is the innermost active step of its sequence */
static napi_value n_is_top(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    hslot* h = jh_get(e, argv[0], KINDS_STEP);
    napi_value r;
    napi_get_boolean(env, h != NULL && futoin_steps_is_top(h->bsi), &r);
    return r;
}

static napi_value n_root_id(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    hslot* h = handle_or_throw(env, e, argv[0], KINDS_ADD);
    if (!h) {
        return NULL;
    }
    napi_value r;
    napi_create_double(env, (double)h->bsi->api->rootId(h->bsi), &r);
    return r;
}

/* ---- AsyncToolTest: the JS side of the virtual-time tool ---- */

static void test_fire(void* data)
{
    jsenv* e = tl_env;
    napi_value argv[1];
    napi_create_double(e->env, (double)(uintptr_t)data, &argv[0]);
    /* as the reference's events: execute(), error() from outside and
     * nextEvent() inside one run at once */
    const int tok = futoin_tool_event_open(e->test_tool);
    call_js(e, e->f_call, NULL, 1, argv);
    futoin_tool_event_close(e->test_tool, tok);
}

/* testLater(key, ms) -> [data1, data3] packed as handle parts in scratch */
static napi_value n_test_later(napi_env env, napi_callback_info info)
{
    GET_ARGS(2);
    double key = 0, ms = 0;
    napi_get_value_double(env, argv[0], &key);
    napi_get_value_double(env, argv[1], &ms);
    if (!(ms >= 0)) {
        ms = 0;
    } else if (ms > UINT32_MAX) {
        ms = UINT32_MAX; /* Infinity too: after every finite delay, as there */
    }
    FutoInAsyncSteps* s = e->test_sched;
    FutoInHandle hd = ms > 0 ? s->api->sched_deferred(s, (uint32_t)ms, (void*)(uintptr_t)key, test_fire)
                             : s->api->sched_immediate(s, (void*)(uintptr_t)key, test_fire);
    napi_value out;
    void* data;
    NAPI_OK(napi_create_buffer_copy(env, sizeof(hd), &hd, &data, &out));
    return out;
}

static napi_value n_test_cancel(napi_env env, napi_callback_info info)
{
    GET_ARGS(1);
    void* data;
    size_t len = 0;
    if (napi_get_buffer_info(env, argv[0], &data, &len) == napi_ok && len == sizeof(FutoInHandle)) {
        FutoInHandle hd;
        memcpy(&hd, data, sizeof(hd));
        e->test_sched->api->sched_cancel(e->test_sched, &hd);
    }
    return NULL;
}

/* testNext() -> whether anything ran */
#define BUSY_TEST_TOOL                                                                                           \
    "AsyncToolTest.nextEvent() or run() inside a callback the test tool runs itself (a cancel handler a step "  \
    "timeout runs): the events after it run once it returns"

#define BUSY_OWN_FLOW                                                                                            \
    "AsyncToolTest.nextEvent() or run() inside a step, when only events of that step's own flow are left (a " \
    "step timeout, a turn of another branch): they run once the step returns"

static napi_value n_test_next(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    napi_value r;
    if (futoin_tool_host_pending(e->test_tool)) {
        napi_create_int32(env, 2, &r); /* JS runs the steps set aside */
        return r;
    }
    int64_t before = futoin_tool_next_delay(e->test_tool);
    if (before >= 0) {
        jlazy lz;
        lz_enter(e, &lz);
        int ran = futoin_tool_run_one(e->test_tool);
        if (!ran && futoin_tool_host_taken(e->test_tool)) {
            /* virtual time: something pending always runs, but for the
             * events of the flow of a step JS runs now */
            lz_leave(e, &lz);
            napi_throw_error(env, NULL, "InternalError: " BUSY_OWN_FLOW);
            return NULL;
        }
        if (!ran && futoin_tool_in_event(e->test_tool)) {
            /* nothing runs nested in an event (0 otherwise: it only took in
             * a post of another thread that scheduled nothing) */
            lz_leave(e, &lz);
            napi_throw_error(env, NULL, "InternalError: " BUSY_TEST_TOOL);
            return NULL;
        }
        lz_leave(e, &lz);
    }
    napi_create_int32(env, before >= 0, &r);
    return r;
}

static napi_value n_test_has(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    napi_value r;
    napi_get_boolean(env, futoin_tool_next_delay(e->test_tool) >= 0 || futoin_tool_host_pending(e->test_tool), &r);
    return r;
}

static napi_value n_test_now(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    napi_value r;
    napi_create_double(env, (double)futoin_tool_now(e->test_tool), &r);
    return r;
}

/* cancel every running flow of the test tool (resetEvents) */
static napi_value n_test_reset(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    for (uint32_t s = 1; s < e->nslots; ++s) {
        hslot* h = &e->slots[s];
        if (h->kind == HK_ROOT && h->root->test && h->root->running) {
            jroot* r = h->root;
            r->bsi->api->cancel(r->bsi);
            root_end(r);
        }
    }
    return NULL;
}

/* stats() -> {slots, live}: handle table size and handles in use */
static napi_value n_stats(napi_env env, napi_callback_info info)
{
    GET_ARGS(0);
    uint32_t live = 0;
    for (uint32_t s = 1; s < e->nslots; ++s) {
        live += e->slots[s].kind != HK_FREE;
    }
    napi_value o, v;
    NAPI_OK(napi_create_object(env, &o));
    napi_create_uint32(env, e->nslots, &v);
    napi_set_named_property(env, o, "slots", v);
    napi_create_uint32(env, live, &v);
    napi_set_named_property(env, o, "live", v);
    napi_create_uint32(env, e->host_fallbacks, &v);
    napi_set_named_property(env, o, "hostFallbacks", v);
    return o;
}

napi_status js_steps_register(napi_env env, napi_value exports)
{
    futoin_tool_set_host_exec(tl_env->tool, tr_host_step);
    futoin_tool_set_host_exec(tl_env->test_tool, tr_host_step);
    futoin_tool_set_args_hook(tl_env->tool, jv_args_hook, tl_env);
    futoin_tool_set_args_hook(tl_env->test_tool, jv_args_hook, tl_env);
    futoin_tool_set_host_cleanup(tl_env->tool, frag_cleanup);
    futoin_tool_set_host_cleanup(tl_env->test_tool, frag_cleanup);
    /* a flow runs its steps as one burst, as futoin-asyncsteps runs them */
    futoin_tool_set_host_bursts(tl_env->tool, 1);
    futoin_tool_set_host_bursts(tl_env->test_tool, 1);
    futoin_tool_set_host_loops(tl_env->tool, tr_host_loop, tr_host_repeat);
    futoin_tool_set_host_loops(tl_env->test_tool, tr_host_loop, tr_host_repeat);
    futoin_tool_set_host_error(tl_env->tool, tr_host_error);
    futoin_tool_set_host_error(tl_env->test_tool, tr_host_error);
    futoin_tool_set_burst_owner(tl_env->tool, burst_takes, owns_burst, tl_env);
    futoin_tool_set_burst_owner(tl_env->test_tool, burst_takes, owns_burst, tl_env);
    static const struct
    {
        const char* name;
        napi_callback cb;
    } fns[] = {
            {"rootNew", n_root_new},
            {"rootFree", n_root_free},
            {"flush", n_flush},
            {"hostNext", n_host_next},
            {"hostDone", n_host_done},
            {"awaited", n_awaited},
            {"runsSubsteps", n_runs_substeps},
            {"readyNow", n_ready_now},
            {"atTop", n_at_top},
            {"goesOnLater", n_goes_on_later},
            {"inBranch", n_in_branch},
            {"flowNow", n_flow_now},
            {"resumeNow", n_resume_now},
            {"ownerNow", n_owner_now},
            {"claimQueued", n_claim_queued},
            {"waiting", n_waiting},
            {"stats", n_stats},
            {"drainSpill", n_drain_spill},
            {"drainFinSpill", n_drain_fin_spill},
            {"add", n_add},
            {"parallel", n_parallel},
            {"success", n_success},
            {"error", n_error},
            {"failWaiting", n_fail_waiting},
            {"finishDone", n_finish_done},
            {"setTimeout", n_set_timeout},
            {"setCancel", n_set_cancel},
            {"sweep", n_sweep},
            {"abandon", n_abandon},
            {"externalTold", n_external_told},
            {"waitExternal", n_wait_external},
            {"loop", n_loop},
            {"repeat", n_repeat},
            {"break", n_break},
            {"continue", n_continue},
            {"execute", n_execute},
            {"cancel", n_cancel},
            {"sync", n_sync},
            {"valid", n_valid},
            {"rootId", n_root_id},
            {"isTop", n_is_top},
            {"loopRan", n_loop_ran},
            {"testLater", n_test_later},
            {"testCancel", n_test_cancel},
            {"testNext", n_test_next},
            {"testHas", n_test_has},
            {"testNow", n_test_now},
            {"testReset", n_test_reset},
    };
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); ++i) {
        napi_status st = js_set_fn(env, exports, fns[i].name, fns[i].cb);
        if (st != napi_ok) {
            return st;
        }
    }
    return napi_ok;
}
