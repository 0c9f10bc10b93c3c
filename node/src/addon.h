/*
 * futoin-polyglot Node-API addon: shared declarations.
 *
 * JS objects never hold C pointers. Every FutoInAsyncSteps* the JS side may
 * use (a root, an active step, a parallel object, a wrapped foreign flow) is
 * a slot of a per-environment handle table, named to JS by a Number that
 * carries the slot and its generation; a stale handle is detected, never
 * dereferenced. JS functions stay in JS (lib/registry.js FNS) and C keeps
 * only their index; while a flow is idle (sweep()), its root holds them and
 * JS holds the root weakly, so the garbage collector sees every cycle
 * between an abandoned flow and its closures.
 */
#ifndef FUTOIN_NODE_ADDON_H
#define FUTOIN_NODE_ADDON_H

#include <futoin/core.h>
#include <node_api.h>
#include <uv.h>

#include <pthread.h>

#include <stdint.h>

#define NAPI_OK(call)                                                                              \
    do {                                                                                           \
        if ((call) != napi_ok) {                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

/* what dispatch tells C about a JS callback: the step is still active when
 * it added steps or waits, unless it completed itself */
#define JS_F_ADDED 1
#define JS_F_WAIT 2
#define JS_F_DONE 4
#define JS_HOST_TEST 8  /* hostNext/hostDone: the AsyncToolTest tool */
#define JS_HOST_TAKE 16 /* hostDone: hand over the next step (the burst goes on) */
#define JS_HOST_FINISH 32 /* execute(): JS wants the unhandled error even when it raised it */
#define JS_HOST_NESTED 64 /* execute(), hostDone(): take only steps of that flow (run inside a step) */
#define JS_F_BATCH 128 /* hostDone: the step was a batch of JS steps, SH_BATCH more of them ran */
#define JS_HOST_MORE 512 /* hostDone, nested: set SH_MORE when the flow has no JS step left (await) */
#define JS_F_ITERS 1024 /* hostDone: a loop body that ran SH_ITER more iterations of its loop (host_loop_ran) */
#define JS_HOST_ERRORS 2048 /* hostDone, nested: take only error handlers (an error raised from outside) */
#define JS_CODE_SAME 1    /* low 3 bits of an error handler's code: the error JS saw last */

enum hkind
{
    HK_FREE = 0,
    HK_STEP,     /* a step inside one of its callbacks or waiting */
    HK_ROOT,     /* the root of a JS AsyncSteps */
    HK_PARALLEL, /* the object returned by parallel() */
    HK_FOREIGN,  /* a FutoInAsyncSteps* wrapped with native.wrap() */
};

typedef struct jroot jroot;
typedef struct jfrag jfrag;
typedef struct jsenv jsenv;

/* The type of a JS value C code holds, one set per instance: its cleanup
 * finds the instance, also on a thread of C code (values.c) */
typedef struct jvtype
{
    FutoInType t;
    jsenv* e;
    int kind;
} jvtype;
enum
{
    JV_OBJ,
    JV_BOXED, /* [value] */
    JV_PACK,  /* > 4 values */
    JV_BYTES, /* a Buffer, a Uint8Array */
    JV_I8,
    JV_U8C,
    JV_I16,
    JV_U16,
    JV_I32,
    JV_U32,
    JV_F32,
    JV_F64,
    JV_I64,
    JV_U64,
    JV_NTYPES
};

typedef struct hslot
{
    FutoInAsyncSteps* bsi;
    jroot* root;
    uint32_t gen;
    uint32_t next_free;
    uint8_t kind;
    jfrag* frag; /* a step taken by the host: its data */
} hslot;

struct jroot
{
    jsenv* e;
    napi_ref obj; /* foreign roots only: the JS view, strong while it has live callbacks */
    FutoInAsyncSteps* bsi;
    FutoInAsyncTool* tool;
    uint32_t slot;
    uint32_t live;    /* live callback indices (foreign roots) */
    uint8_t running;  /* executed and not finished */
    uint8_t test;     /* on the AsyncToolTest tool */
    uint8_t foreign;  /* made by wrap() */
    uint8_t finish;   /* JS waits for an unhandled error (promise()) */
    uint8_t jerr;     /* jbuf holds the last error JS saw (_jsErr, _jsInfo) */
    uint8_t weak;     /* idle: JS holds its root weakly (sweep()); a call on its handles wakes it */
    uint32_t seen;    /* the sweep() that found it idle, 0: it moved since (a handle used or made) */
    uint8_t exported; /* binary() gave C code a pointer into it: never weak */
    uint8_t gone;     /* abandoned: its JS root was collected, no JS runs for it */
    char* jbuf;       /* "code\0info\0" */
    size_t jcap;
    jroot* next_free;
    jroot *run_prev, *run_next; /* e->run: running, held strongly, may become weak */
    uint8_t in_run;
};

/* a JS callback of a step: its index in the JS registry (lib/registry.js) */
struct jfrag
{
    jroot* root;
    uint32_t k;    /* JK_NONE: handed over to JS, which frees it */
    uint8_t no_eh; /* a plain step without error handler: JS may free k once it ran */
    uint8_t batch; /* a batch of JS steps (lib/AsyncSteps.js runBatch): wants SH_BUDGET */
    uint8_t own;   /* the step's own data (futoin_tool_host_add): it can keep the handle */
    uint8_t pad;
    uint32_t kept, kept_gen; /* own: the handle slot kept while the step lives (0: none) */
};
_Static_assert(sizeof(jfrag) <= FUTOIN_HOST_DATA_SIZE, "a frag fits a step's own data");
#define JK_NONE UINT32_MAX

/*
 * The Int32Array shared with JS (lib/registry.js has the same layout):
 * JS queues the cheap operations of a step callback there and C applies
 * them when the callback returns or before any other native call; C lists
 * there the callback indices it released and the roots that finished.
 */
#define SH_OPS_N 0   /* int32 words queued */
#define SH_FREED_N 1 /* released callback indices */
#define SH_FIN_N 2   /* finished roots (slot, gen pairs) */
#define SH_RET 3     /* a second result of a native call */
#define SH_SPILL 4   /* released indices that did not fit (fetch with drainSpill) */
#define SH_H 5       /* hostNext/hostDone: the step's handle */
#define SH_ROOT 6    /* hostNext/hostDone: its root's slot */
#define SH_ITER 7    /* hostNext/hostDone: a repeat body's iteration (-1: in hostArgs[0]) */
#define SH_HOST_IN 8  /* hostNext/hostDone: JS_F_* | JS_HOST_* from JS */
#define SH_HOST_OUT 9 /* hostNext/hostDone: the code of the next JS step, 0: none */
#define SH_NUM_N 10   /* numbers queued for OP_SUCCESS (the first at double index 1) */
#define SH_K_OWN 11   /* hostNext/hostDone: 1 when JS frees the step's index after running it */
#define SH_BUDGET 12  /* hostNext/hostDone: the steps its strand may still run in this burst (a loop body: host_loop_room) */
#define SH_BATCH 13   /* hostDone with JS_F_BATCH: the steps of a batch JS ran beyond the first */
#define SH_TOUCH 14   /* bumped by every native call that may change a flow (a batch stops then) */
#define SH_MORE 15    /* awaited(), flowNow(), hostDone with JS_HOST_MORE at the flow's end: 1 other work of the scheduler is ready now, 2 a parallel's handlers wait (a branch failed) */
#define SH_OPS 16
#define SH_OPS_CAP 3072
#define SH_FREED (SH_OPS + SH_OPS_CAP)
#define SH_FREED_CAP 8192
#define SH_FIN (SH_FREED + SH_FREED_CAP)
#define SH_FIN_CAP 2048
/* a Float64Array over the same memory: numbers of OP_SUCCESS (from 1 on,
 * SH_NUM_N of them queued) and the one number hostNext/hostDone hand over
 * (index 0, step code low bits JS_CODE_NUM1) */
#define SH_NUM (SH_FIN + SH_FIN_CAP) /* int32 index; even, so 8-byte aligned */
#define SH_NUM_CAP 1024              /* doubles */
/* JS queued a setImmediate() for the next turn (an external completion):
 * ready work waits for it, behind the setImmediate() callbacks queued
 * before, as futoin-asyncsteps goes on through callImmediate() */
#define SH_IMM (SH_NUM + 2 * SH_NUM_CAP)
#define SH_FIN_MORE (SH_IMM + 1) /* finished roots past SH_FIN_CAP (fetch with drainFinSpill) */
#define SH_ERR_FRESH (SH_IMM + 2) /* 1: the error JS is handed came out of a parallel branch: a new Error */
#define SH_OWNER (SH_IMM + 3) /* the root handle of the flow that owns the burst (src/steps.c burst_takes()) */
#define SH_TICKET (SH_IMM + 4) /* success() from outside: the ticket of the event JS owes its strand (futoin_steps_owed()) */
#define SH_OWNER_BR (SH_IMM + 6) /* with SH_OWNER: the branch key of who owns the burst, 0: the main sequence */
#define SH_SIZE (SH_IMM + 7)
#define SUCCESS_OUTSIDE (1 << 30) /* success(): the count's flag of a call from outside the step's callback */
#define JS_CODE_NUM1 6 /* low 3 bits of a step code: one number, in the Float64Array at 0 */

enum jop
{
    OP_TARGET = 1, /* slot, gen */
    OP_ADD,        /* k, has_onerror | OP_BATCH */
    OP_PAR,        /* k, has_onerror */
    OP_PADD,       /* k, has_onerror: a branch of the last OP_PAR */
    OP_WAIT,       /* -, - */
    OP_TIMEOUT,    /* ms, - */
    OP_CANCEL,     /* k, - */
    OP_SUCCESS,    /* n (0..4), first: success() with n numbers queued at double index first */
    OP_SYNC,       /* sync id, k | has_onerror: as.sync() with a Mutex, Throttle or Limiter */
    OP_FOLLOW,     /* k, OP_BATCH or 0: a plain JS step right after the target, a step of a batch (runBatch) */
};
#define OP_BATCH 2 /* OP_ADD, OP_FOLLOW: k is a batch of JS steps */

/* a growable list of int32 for JS (spills of the shared areas, sweep()) */
typedef struct ivec
{
    int32_t* v;
    uint32_t n, cap;
    int oom; /* a push failed: the list misses values */
} ivec;

struct jsenv
{
    napi_env env;
    FutoInAsyncTool* tool;      /* the libuv-driven one */
    FutoInAsyncTool* test_tool; /* AsyncToolTest: virtual time, run by JS */
    FutoInAsyncSteps* test_sched; /* a root of test_tool, for sched_* calls */
    uv_loop_t* loop;
    uv_timer_t timer;
    uv_check_t check;
    uv_idle_t idle;
    uv_async_t async;
    int armed; /* last arm() delay: -1 idle, 0 ready, >0 timer */
    uint32_t holds; /* keepAlive() calls not released */
    napi_async_context actx;
    napi_ref resource;
    napi_ref f_step, f_error, f_cancel, f_finish, f_call, f_drain, f_wake, f_defer;
    napi_ref host_args; /* the array hostNext() puts a step's values in */
    napi_ref lib_exc;   /* what the library's own JS threw where no caller takes it: uncaught at the turn's end */
    uint32_t host_fallbacks; /* host steps an engine called itself */
    int32_t* sh; /* the shared Int32Array (SH_*) */
    napi_ref sh_ref;
    int32_t* live; /* by slot: the id of the live handle in it, else 0 */
    uint32_t* gens; /* by slot: how often it was handed out (JS tells a kept interface from a reuse) */
    uint8_t guest;     /* not the thread's first instance of the addon (see js_set_fn) */
    struct jsenv* next_guest;
    napi_ref live_ref;
    napi_ref gens_ref;
    jroot* run; /* running roots a sweep() looks at (not foreign, test or weak) */
    uint32_t sweeps; /* sweep() calls so far */
    jroot* free_roots; /* finished roots kept for reuse (js_roots_pool_free()) */
    uint32_t live_roots; /* roots made and not released */
    uint32_t ext_units;  /* live_roots as told to V8, in ROOT_EXT_STEP roots */
    ivec spill;     /* released callback indices SH_FREED had no room for */
    ivec fin_spill; /* finished roots (slot, gen) SH_FIN had no room for */
    FutoInSync** syncs; /* Mutex, Throttle, Limiter objects by id (OP_SYNC) */
    uint32_t* sync_next; /* free ids, linked */
    uint32_t nsyncs, capsyncs, free_sync; /* free_sync: a free id + 1, 0: none */
    hslot* slots;
    uint32_t nslots, free_slot, free_tail;
    uint32_t nfree; /* slots on the free list */
    uint32_t maxslots; /* JH_SLOTS; FUTOIN_POLYGLOT_MAX_HANDLES lowers it (tests of a full table) */
    struct jlazy
    {
        napi_handle_scope scope;
        uint32_t uses;
        int ok;
        napi_value f_step, undef; /* fetched once per scope */
    } lz; /* one handle scope shared by a run of dispatches */
    int production;    /* NODE_ENV=production: no sanity checks */
    uint32_t turn_steps;   /* JS steps run in this turn of the loop */
    uint32_t exec_slot;    /* the root execute() runs now: JS has not listed it yet */
    napi_value exec_obj;
    jvtype vt[JV_NTYPES]; /* JS values held by C (values.c) */
    pthread_t thread;      /* its JS thread */
    int gone;              /* the environment was torn down */
};

/* per-thread: one Node environment per JS thread */
extern _Thread_local jsenv* tl_env;
/* make `e` the current instance; returns the one before (guest instances) */
jsenv* js_env_switch(jsenv* e);
/* the thread's first instance; its next_guest list holds the others */
jsenv* js_env_first(void);

/* A handle scope costs an allocation; a run of dispatches inside one native
 * call or libuv callback shares one, renewed every 64 dispatches. Every
 * entry point that may run steps brackets itself with these. */
typedef struct jlazy jlazy;
static inline void lz_enter(jsenv* e, jlazy* saved)
{
    *saved = e->lz;
    e->lz.scope = NULL;
    e->lz.uses = 0;
    e->lz.ok = 1;
    e->lz.f_step = NULL;
    e->lz.undef = NULL;
}

static inline void lz_leave(jsenv* e, const jlazy* saved)
{
    if (e->lz.scope) {
        napi_close_handle_scope(e->env, e->lz.scope);
    }
    e->lz = *saved;
}

/* handle table (handles.c): a handle is slot | gen << JH_SLOT_BITS */
#define JH_SLOT_BITS 21 /* ~1M flows waiting at once (a root and a step handle each) */
#define JH_SLOTS (1u << JH_SLOT_BITS)
uint32_t jh_alloc(jsenv* e, FutoInAsyncSteps* bsi, jroot* root, uint8_t kind);
/* the last JH_RESERVE handles are for error handlers: with the table full,
 * the steps that fail for it still have their handlers run */
#define JH_RESERVE 64
/* a handle for a step (or parallel) that is no error handler: 0 when only
 * the reserve is left */
uint32_t jh_alloc_step(jsenv* e, FutoInAsyncSteps* bsi, jroot* root, uint8_t kind);
void jh_free(jsenv* e, uint32_t slot);
double jh_id(jsenv* e, uint32_t slot);
hslot* jh_get(jsenv* e, napi_value v, int kinds);
/* a weak root (sweep()) is used again: JS holds it strongly from now on */
void jr_wake(jsenv* e, jroot* r);
static inline void jr_touch(jsenv* e, jroot* r)
{
    if (r) {
        r->seen = 0;
        if (r->weak) {
            jr_wake(e, r);
        }
    }
}
napi_status jh_new_id(jsenv* e, uint32_t slot, napi_value* out);

/* JS values <-> binary values (values.c) */
void jv_init(jsenv* e);
/* futoin_tool_set_args_hook(): typed arrays for a C step as they are now */
void jv_args_hook(void* ctx, FutoInArgs* args);
int jv_to_value(napi_env env, napi_value v, FutoInBinaryValue* out);
napi_value jv_from_value(napi_env env, const FutoInBinaryValue* v);
/* the number of values a step receives, and them in argv[0..3]; a pack of
 * more than four is spread by JS (n < 0: -n values in argv[0] as an array) */
int jv_from_args(napi_env env, const FutoInArgs* args, napi_value* argv);
/* zero by fields: a memset of the 128-byte struct becomes `rep stos` */
static inline void jv_zero_args(FutoInArgs* a)
{
    for (int i = 0; i < 4; ++i) {
        a->args[i].type = NULL;
        a->args[i].u64 = 0;
        a->args[i].custom_data = NULL;
        a->args[i].length = 0;
    }
}
/* a JS number as a value (what jv_to_value makes of it) */
void jv_number(double d, FutoInBinaryValue* out);
/* a value JS gets as a plain number: 1 and *d set, else 0 */
int jv_as_number(const FutoInBinaryValue* v, double* d);
int jv_args_from_js(napi_env env, size_t n, napi_value* argv, FutoInArgs* out);

/* the driver (driver.c) */
int jd_init(jsenv* e);
void jd_close(jsenv* e);
/* JS steps were left set aside: come back on the next loop turn */
void jd_arm_ready(jsenv* e);
/* keep exc (the library's own JS threw it) for the end of the turn: uncaught there, as futoin-asyncsteps' */
void jd_lib_exception(jsenv* e, napi_value exc);
napi_value jd_run_now(napi_env env, napi_callback_info info);
napi_value jd_hold(napi_env env, napi_callback_info info);

/* errors */
napi_value js_throw_type(napi_env env, const char* msg);
napi_value js_throw_error(napi_env env, const char* code, const char* msg);

/* steps (steps.c) */
napi_status js_steps_register(napi_env env, napi_value exports);
jfrag* jr_frag(FutoInAsyncSteps* owner, jroot* r, uint32_t k);
/* addC() with a JS error handler (registry index k): 0, or -1 out of memory */
int js_add_c_with_js_eh(FutoInAsyncSteps* bsi, jroot* r, FutoInAsyncSteps_execute_callback fn, void* data,
                        uint32_t k);
void js_flush_ops(jsenv* e);
/* run the JS callback k of f's root for `bsi`; mode 1 keeps the callback */
void js_run_step(FutoInAsyncSteps* bsi, jfrag* f, int mode, const FutoInArgs* args, size_t i);
/* a jroot's memory, with its error buffer */
void jroot_free(jroot* r);
/* free the finished roots kept for reuse (the environment's cleanup hook) */
void js_roots_pool_free(jsenv* e);
/* a JS callback of the step `bsi` dispatched through `fn`; returns the flags */
int32_t js_dispatch(jsenv* e, napi_ref fn, FutoInAsyncSteps* bsi, jroot* r, size_t argc, napi_value* argv);
int32_t js_call_fn(jsenv* e, napi_ref fn, size_t argc, napi_value* argv);

/* sync objects and C steps (sync.c, native.c) */
napi_status js_sync_register(napi_env env, napi_value exports);
napi_status js_native_register(napi_env env, napi_value exports);
FutoInSync* js_sync_of(napi_env env, napi_value v);
FutoInSync* js_sync_by_id(jsenv* e, uint32_t id);

/* helpers */
napi_status js_set_fn(napi_env env, napi_value obj, const char* name, napi_callback cb);
char* js_strdup(napi_env env, napi_value v); /* malloc'd UTF-8 or NULL */
napi_value js_addr(napi_env env, const void* p); /* a pointer as a BigInt */

#endif
