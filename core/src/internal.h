/* Internal structures of the core; never installed. */
#ifndef FUTOIN_CORE_INTERNAL_H
#define FUTOIN_CORE_INTERNAL_H

#include <futoin/core.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define FTN_HIDDEN __attribute__((visibility("hidden")))
#define FTN_LIKELY(x) __builtin_expect(!!(x), 1)
#define FTN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FTN_NOINLINE __attribute__((noinline))

/* ---- allocation (alloc.c) ---- */
FTN_HIDDEN void* ftn_malloc(size_t size);
FTN_HIDDEN void* ftn_calloc(size_t size);
FTN_HIDDEN void* ftn_realloc(void* p, size_t size);
FTN_HIDDEN void ftn_free(void* p);
FTN_HIDDEN char* ftn_strdup(const char* s);

/* A growable string buffer kept for reuse (no allocation once large enough). */
typedef struct fbuf
{
    char* s;
    size_t cap;
} fbuf;
FTN_HIDDEN int fbuf_set(fbuf* b, const char* s);
/* out of memory for `s`: `fallback`, a literal shorter than the smallest
 * buffer; never what the buffer held before */
FTN_HIDDEN void fbuf_set_or(fbuf* b, const char* s, const char* fallback);
FTN_HIDDEN void fbuf_free(fbuf* b);

/* ---- scheduler (tool.c) ---- */

/* An immediate task: strands embed one, user immediates come from a pool. */
typedef struct ftask
{
    struct ftask* next;
    struct ftask* prev;
    void (*cb)(void* data);
    void* data;
    uint64_t gen; /* fgen_*(): a pooled one's handle names it */
    uint64_t seq; /* timer_seq when queued: run_one() orders it among due timers */
    uint8_t queued;
    uint8_t pooled;
    uint8_t urgent; /* ftool_task_push_urgent(): part of the timer event that queued it */
    uint32_t* owner_n; /* counts it while queued (a flow's queued strands), or NULL */
} ftask;

typedef struct ftimer
{
    uint64_t deadline;
    uint64_t seq;
    void (*cb)(void* data);
    void* data;
    uint64_t gen; /* fgen_*() */
    uint32_t heap_idx; /* UINT32_MAX when not armed */
    struct ftimer* next_free;
} ftimer;

/* a scheduler handle: data1 the task or timer, data2 the tool, data3 the
 * generation << 1 | the kind */
#define HANDLE_IMMEDIATE 0
#define HANDLE_DEFERRED 1

/* The generation of a user immediate or a timer, which its handle names:
 * even while that use lasts, odd once it ended (it ran, was cancelled or
 * stopped), even again back in its pool. Another thread's sched_cancel()
 * ends a use as the loop thread does, by claiming it with a
 * compare-and-swap, so exactly one of them wins: the callback runs only if
 * the loop did. The pools keep their memory while the tool lives. */
static inline uint64_t fgen_get(const uint64_t* g)
{
    return __atomic_load_n(g, __ATOMIC_ACQUIRE);
}

static inline int fgen_claim(uint64_t* g, uint64_t gen)
{
    return !(gen & 1) && __atomic_compare_exchange_n(g, &gen, gen + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* the generation word of a scheduler handle's task or timer */
static inline uint64_t* handle_gen(const FutoInHandle* h)
{
    return (h->data3 & 1) == HANDLE_DEFERRED ? &((ftimer*)h->data1)->gen : &((ftask*)h->data1)->gen;
}

/* back to its pool (loop thread): the next use's generation, past any
 * claim of this one */
static inline void fgen_next(uint64_t* g)
{
    __atomic_store_n(g, (fgen_get(g) | 1) + 1, __ATOMIC_RELEASE);
}

/* The host queue of strands whose step waits for the host, kept twice:
 * the tool's (in order) and its flow's own (the same order, so the host
 * takes a flow's next step at once). */
struct fstrand;
/* the calling thread: its thread pointer where the compiler reads it
 * inline (the same value as pthread_self(), which is a call into libc) */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && (defined(__x86_64__) || defined(__aarch64__))
typedef void* fthread_id;
static inline fthread_id fthread_self(void)
{
    return __builtin_thread_pointer();
}
static inline int fthread_same(fthread_id a, fthread_id b)
{
    return a == b;
}
#else
typedef pthread_t fthread_id;
#define fthread_self pthread_self
#define fthread_same pthread_equal
#endif

typedef struct fhq_link
{
    struct fstrand* next;
    struct fstrand* prev;
} fhq_link;

typedef struct fhq
{
    struct fstrand* head;
    struct fstrand* tail;
} fhq;

/* A message posted from another thread. */
typedef struct fpost
{
    struct fpost* next;
    void (*fn)(struct fpost* msg);
    FutoInAsyncSteps* bsi;
    uint32_t gen; /* of the step when posted */
    FutoInArgs args;
    char* code;
    char* info;
    void (*call)(void* data); /* futoin_tool_post() */
    void* call_data;
    uint8_t kept; /* not freed once taken: part of a record (tool_remote.c) */
} fpost;

typedef struct fpool
{
    void* free_list; /* intrusive: the link lives at link_off in each item */
    void** chunks;
    size_t nchunks;
    size_t item_size;
    size_t link_off;
    size_t per_chunk;
} fpool;
FTN_HIDDEN void* fpool_get(fpool* p);
FTN_HIDDEN void fpool_put(fpool* p, void* item);
FTN_HIDDEN void fpool_init(fpool* p, size_t item_size, size_t link_off, size_t per_chunk);
FTN_HIDDEN void fpool_destroy(fpool* p);

struct fflow;

struct FutoInAsyncTool_
{
    /* immediates (doubly linked so strands can leave the queue) */
    ftask* q_head;
    ftask* q_tail;
    size_t q_len;
    /* timers: binary min-heap on (deadline, seq) */
    ftimer** heap;
    uint32_t heap_len;
    uint32_t heap_cap;
    uint64_t timer_seq;
    uint32_t tickets; /* the last ticket of futoin_steps_owed() (31 bits, never 0) */
    fpool timer_pool;
    fpool task_pool;
    /* step engine pools (steps.c) */
    fpool step_pool;
    struct fstep* cool_head; /* steps that ended while waiting, oldest first, out of step_pool for a while */
    struct fstep* cool_tail;
    uint32_t cool_n; /* how many: at FTN_REUSE_MAX_STEPS the oldest goes back early */
    fpool strand_pool;
    fpool small_pool; /* stack() allocations up to FTN_SMALL_ALLOC */
    struct fflow* free_flows;
    uint64_t next_root_id; /* rootId()s: a block of the process-wide ones (ftool_root_id) */
    uint64_t root_id_end;
    uint32_t burst;
    FutoInArgs in_args; /* what the running step callback received */
    /* steps whose callback the host runs itself (futoin_tool_set_host_exec) */
    FutoInAsyncSteps_execute_callback host_exec;
    void (*args_hook)(void* ctx, FutoInArgs* args); /* futoin_tool_set_args_hook() */
    void* args_hook_ctx;
    void (*host_cleanup)(void* data); /* data of host_add() steps */
    /* loop and repeat bodies the host runs itself (futoin_tool_set_host_loops) */
    void (*host_loop)(FutoInAsyncSteps* bsi, void* data);
    void (*host_repeat)(FutoInAsyncSteps* bsi, void* data, size_t i);
    FutoInAsyncSteps_error_callback host_eh;
    fhq host_q;
    uint32_t host_active; /* host steps taken and not done: inside callbacks */
    int host_bursts;      /* futoin_tool_set_host_bursts() */
    struct fstrand* host_cont; /* the strand host_done() goes on with */
    int deferred; /* futoin_tool_take_deferred() */
    struct fflow* defer_head; /* the flows that set it, oldest first (futoin_tool_take_deferred_root()) */
    struct fflow* defer_tail;
    int eh_run;   /* a run of the handlers of an error from outside (a burst of 0): what yields is after_eh */
    struct fstrand* owner_cont; /* yielded after a step timeout's handlers, owns the burst: goes on at once */
    /* futoin_tool_set_burst_owner() */
    void (*burst_takes)(void* ctx, FutoInAsyncSteps* root, uint32_t branch);
    int (*owns_burst)(void* ctx, FutoInAsyncSteps* root, uint32_t branch);
    void* owns_burst_ctx;
    uint32_t urgent; /* queued tasks marked urgent */
    /* clock */
    futoin_clock_fn clock;
    void* clock_data;
    uint64_t vnow;
    uint32_t busy_turns; /* virtual time: iterate() turns in a row that found work and a timer not due */
    int virtual_time;
    /* threads */
    fthread_id owner;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    fpost* posts;
    fpost** posts_tail;
    atomic_int has_posts;
    atomic_int refs;
    int sleeping;
    int running;
    /* roots and sync objects of it not freed yet: futoin_tool_free() of a
     * tool with some leaves it dying, gone with the last of them */
    uint32_t live;
    atomic_uint remote_live; /* the roots of live made on another thread */
    /* immediate()/deferred() from another thread (tool_remote.c), under lock */
    struct fremote* remote_free;
    struct fremote* remote_all;
    char remote_mark; /* its address marks their handles */
    int dying;
    /* host loop */
    FutoInLoopHooks hooks;
    int has_hooks;
    int64_t armed_delay;
    uint64_t armed_deadline; /* the timer deadline armed_delay was for (UINT64_MAX: none) */
};

FTN_HIDDEN uint64_t ftool_now(FutoInAsyncTool* t);
FTN_HIDDEN uint64_t ftool_root_id(FutoInAsyncTool* t);
FTN_HIDDEN uint64_t ftool_root_id_remote(void);
FTN_HIDDEN void ftool_hold(FutoInAsyncTool* t);
FTN_HIDDEN void ftool_drop(FutoInAsyncTool* t);
FTN_HIDDEN void ftool_drop_remote(FutoInAsyncTool* t);
FTN_HIDDEN void ftool_task_push(FutoInAsyncTool* t, ftask* task);
/* a new ticket of a host event a strand is owed (fstrand.owed) */
FTN_HIDDEN uint32_t ftool_ticket(FutoInAsyncTool* t);
/* ahead of everything queued (what the reference does inside the current call) */
FTN_HIDDEN void ftool_task_push_front(FutoInAsyncTool* t, ftask* task);
FTN_HIDDEN void ftool_task_remove(FutoInAsyncTool* t, ftask* task);
/* queued as any task, and for futoin_tool_run_one() part of the timer's
 * event that queued it (a step timeout's error handlers) */
FTN_HIDDEN void ftool_task_push_urgent(FutoInAsyncTool* t, ftask* task);
FTN_HIDDEN ftimer* ftool_timer_start(
        FutoInAsyncTool* t, uint32_t delay_ms, void (*cb)(void*), void* data);
FTN_HIDDEN void ftool_timer_stop(FutoInAsyncTool* t, ftimer* tm, uint64_t gen);
/* inline and cheap: each root made and freed checks it */
FTN_HIDDEN FutoInHandle ftool_schedule(FutoInAsyncTool* t, int64_t delay_ms, void* data, void (*cb)(void*));
FTN_HIDDEN FutoInHandle ftool_remote_schedule(FutoInAsyncTool* t, int64_t delay_ms, void* data, void (*cb)(void*));
FTN_HIDDEN int ftool_remote_handle(FutoInAsyncTool* t, const FutoInHandle* h);
FTN_HIDDEN int ftool_remote_valid(const FutoInHandle* h);
FTN_HIDDEN void ftool_remote_cancel(FutoInAsyncTool* t, FutoInHandle* h);
FTN_HIDDEN void ftool_remote_release(FutoInAsyncTool* t);

static inline int ftool_is_loop_thread(FutoInAsyncTool* t)
{
    return fthread_same(fthread_self(), t->owner);
}
/* Queue a message from another thread; takes ownership of msg. */
FTN_HIDDEN void ftool_post(FutoInAsyncTool* t, fpost* msg);
FTN_HIDDEN void ftool_drop_posts(FutoInAsyncTool* t);
FTN_HIDDEN void ftool_drain_posts(FutoInAsyncTool* t);
FTN_HIDDEN void ftool_run_due_timers(FutoInAsyncTool* t, uint64_t now);
FTN_HIDDEN void ftool_rearm(FutoInAsyncTool* t);

FTN_HIDDEN FutoInHandle ftool_immediate(FutoInAsyncTool* t, void* data, void (*cb)(void*));
/* fl left steps for a later turn (futoin_tool_take_deferred_root()); and
 * off that list again (a flow freed) */
FTN_HIDDEN void ftool_defer_link(FutoInAsyncTool* t, struct fflow* fl);
FTN_HIDDEN void ftool_defer_unlink(FutoInAsyncTool* t, struct fflow* fl);
FTN_HIDDEN FutoInHandle ftool_deferred(
        FutoInAsyncTool* t, uint32_t delay_ms, void* data, void (*cb)(void*));
FTN_HIDDEN void ftool_handle_cancel(FutoInAsyncTool* t, FutoInHandle* h);
FTN_HIDDEN int ftool_handle_valid(FutoInAsyncTool* t, FutoInHandle* h);
/* the same for a handle the loop thread made, from another thread
 * (tool_remote.c) */
FTN_HIDDEN void ftool_handle_cancel_off_loop(FutoInAsyncTool* t, FutoInHandle* h);
FTN_HIDDEN int ftool_handle_valid_off_loop(FutoInAsyncTool* t, const FutoInHandle* h);
/* on the loop thread: the use another thread claimed leaves its queue or heap */
FTN_HIDDEN void ftool_handle_drop(FutoInAsyncTool* t, const FutoInHandle* h);

/* ---- step engine (steps.c) ---- */

enum fkind
{
    FK_ROOT,
    FK_BRANCH,
    FK_STEP,
    FK_PARALLEL,
    FK_LOOP,
    FK_REPEAT,
    FK_LOOP_BODY,
    FK_REPEAT_BODY,
    FK_SYNC,
    FK_SYNC_LOCK
};

enum fstate
{
    FS_FREE,
    FS_QUEUED,
    FS_EXEC,   /* in its execute callback */
    FS_EH,     /* in its error handler */
    FS_SUB,    /* children queued or running */
    FS_WAIT,   /* waiting for an external completion */
    FS_PAR,    /* parallel: branches running */
    FS_CANCEL, /* being torn down */
    FS_IDLE    /* a root not executing */
};

enum fflags
{
    F_SUCCESS = 1 << 0,
    F_ERROR = 1 << 1,
    F_WAIT = 1 << 2,
    F_EH_USED = 1 << 3,
    F_LOCKED = 1 << 4,   /* FK_SYNC: lock acquired */
    F_BREAK = 1 << 5,    /* FK_LOOP/REPEAT: leave after the current children */
    F_DEFER = 1 << 6,    /* futoin_steps_defer_after(): off the fast path, post_exec() clears it */
    F_FRESH = 1 << 7,    /* FK_LOOP/REPEAT: its first iteration is part of the loop step's own turn */
    F_EXPOSED = 1 << 8,  /* it waited for a completion from outside: its pointer may be held there */
    F_TOLD = 1 << 9      /* its own completion (success, error) came from outside while it waited */
};

/* How long the memory of a step that waited and ended without its own
 * completion (a timeout, a cancel) stays unused: a reply coming late
 * through its pointer finds it ended, not a later step in its place */
#define FTN_REUSE_DELAY_MS 10000u
/* ... and at most this many of them: a clock that stands (virtual time) or
 * a storm of timeouts cannot pile them up */
#define FTN_REUSE_MAX_STEPS 4096u

typedef struct falloc
{
    struct falloc* next;
    void (*cleanup)(void* value);
    FutoInAsyncTool* pool; /* small allocations come from the tool's pool */
    /* max-aligned payload follows */
} falloc;

/* stack() payloads up to this size are pooled per tool (wrappers keep one
 * small record per step there) */
#define FTN_SMALL_ALLOC 128

struct fstrand;

typedef struct fstep
{
    FutoInAsyncSteps iface; /* first: bsi == &step->iface */
    struct fstep* next;     /* queue link and pool link */
    struct fstep* parent;
    struct fflow* flow;
    struct fstrand* strand;
    struct fstep* q_head;
    struct fstep* q_tail;
    void* data;
    union
    {
        FutoInAsyncSteps_execute_callback exec;
        void (*loop)(FutoInAsyncSteps* bsi, void* data);
        void (*repeat)(FutoInAsyncSteps* bsi, void* data, size_t i);
    } fn;
    FutoInAsyncSteps_error_callback eh;
    FutoInAsyncSteps_cancel_callback on_cancel;
    void* cancel_data;
    ftimer* timer;
    uint64_t timer_gen;
    falloc* allocs;
    uint8_t kind;
    uint8_t state;
    uint16_t flags;
    uint32_t gen; /* bumped on each reuse: stale cross-thread posts are dropped */
    union
    {
        struct
        {
            size_t count;
            size_t i;
            char* label;
        } loop;
        struct
        {
            FutoInSync* sync;
            FutoInArgs* saved;
            FutoInAsyncSteps_error_callback user_eh;
        } sync;
        struct
        {
            struct fstrand* branches;
            uint32_t pending;
        } par;
        size_t iter; /* FK_REPEAT_BODY */
    } u;
} fstep;

/* host_add() data lives in the union of the step itself */
_Static_assert(sizeof(((fstep*)0)->u) >= FUTOIN_HOST_DATA_SIZE, "host data fits a step");

enum
{
    HQ_QUEUED = 1, /* fstrand.in_host_q: queued by an event of its own */
    HQ_GOES_ON = 2 /* the burst of the step the host just did goes on with it */
};

typedef struct fstrand
{
    ftask task; /* first: scheduling link */
    struct fflow* flow;
    fstep* base;
    fstep* top;
    fstep* par;                 /* branch: the parallel step it belongs to */
    struct fstrand* sib_next;   /* branch list of the parallel step */
    struct fstrand* sib_prev;
    ptrdiff_t id;
    uint8_t code_idx;
    uint8_t err_pending;
    uint8_t info_pending; /* pending_info goes to error_info when unwinding starts */
    uint8_t fresh;        /* a branch not run yet: a nested run of its flow takes its first burst */
    uint8_t in_host_q;    /* on the host queue (HQ_*): its step waits for the host to take it */
    uint8_t unwinding;    /* a cancel handler of its error unwinding runs */
    uint8_t err_crossed;  /* its error came out of a parallel branch, not told to a handler yet */
    uint8_t handlers_only; /* an error from outside its burst (a step timeout, a failed branch):
                              its handlers run in that event, its next step on a later turn */
    uint8_t after_eh;     /* queued right after the handlers of an error from outside: the
                             strand that owns the burst goes on in that event (execute_key) */
    uint32_t owed;        /* the ticket of a host event on its way to it (0: none): futoin_steps_execute_owed() */
    FutoInArgs out_args;  /* the last success() values, for the next step */
    FutoInArgs host_args; /* what a step run by the host receives */
    fhq_link host_link; /* on its tool's host_q */
    fhq_link flow_link; /* on its flow's host_q */
    uint32_t host_budget; /* burst left when the strand went to the host */
    fbuf code[2];         /* error code, double-buffered; kept across pool reuse */
    fbuf pending_info;    /* info of an error raised from outside */
} fstrand;

typedef struct fstate_var
{
    struct fstate_var* next;
    char* name;
    void* value;
    void* data;
    void (*cleanup)(void* data, void* value);
} fstate_var;

enum fflow_flags
{
    FL_RUNNING = 1 << 0,
    FL_CANCEL_REQ = 1 << 1,
    FL_FREE_REQ = 1 << 2,
    FL_REMOTE = 1 << 3 /* made on another thread: counted in the tool's remote_live */
};

typedef struct fflow
{
    fstep base; /* first: the root bsi is &flow->base.iface */
    fstrand main;
    FutoInAsyncTool* tool;
    struct fflow* next_free;
    FutoInAsyncSteps_error_callback unhandled;
    void* unhandled_data;
    void (*done)(FutoInAsyncSteps* root, void* data); /* futoin_steps_set_done() */
    void* done_data;
    void (*cancelled)(FutoInAsyncSteps* root, void* data);
    void* cancelled_data;
    void* host_data; /* futoin_steps_set_host_data() */
    fstate_var* vars;
    fbuf info[2]; /* error_info, double-buffered like the codes */
    uint8_t info_idx;
    /* not next to depth: both change together, and gcc would merge the two
     * increments into one wide load that stalls on the stores before it */
    uint32_t host_queued; /* its strands in the host queue (futoin_tool_host_next_of) */
    fhq host_q;           /* the same strands, in queue order */
    uint32_t flags;
    uint32_t depth; /* user callbacks of this flow on the C stack */
    uint32_t taken; /* its steps the host took and is not done with: nothing else of it runs */
    uint32_t fresh_n; /* branches it started that may not have run yet (a hint: 0 means none) */
    uint32_t queued_n; /* its strands in the tool's queue: a search of the queue for
                        * them ends once it saw them all (other flows' may be many) */
    uint32_t par_failed; /* branch errors since futoin_steps_parallel_failed() (a hint: 0 means none) */
    struct fstrand* cancel_cause; /* while a failed branch cancels its siblings: the parallel's strand */
    FutoInBinaryValue last_exception;
    /* spec 1.7: last_exception holds FutoIn errors too (the code, le_code);
     * a value set for an error stays its own: one unchanged since the last
     * error (le_seen_*) is that error's, the next error replaces it */
    fbuf le_code;
    const FutoInType* le_seen_type;
    const void* le_seen_p;
    uint8_t le_fresh; /* futoin_steps_last_exception_mark(bsi, 1) */
    uint32_t err_gen; /* futoin_steps_error_gen(): error_info or last_exception changed */
    struct fflow* defer_prev; /* on its tool's defer list (in_defer) */
    struct fflow* defer_next;
    uint8_t in_defer;
} fflow;

FTN_HIDDEN extern const FutoInAsyncStepsAPI ftn_steps_api;

FTN_HIDDEN const char* fflow_info(fflow* fl);
FTN_HIDDEN void fflow_set_info(fflow* fl, const char* info);
FTN_HIDDEN void fflow_note_error(fflow* fl, const char* code);
FTN_HIDDEN void fflow_vars_free(fflow* fl);
FTN_HIDDEN fflow* feng_flow_new_remote(FutoInAsyncTool* t);
FTN_HIDDEN void* fflow_state_var(
        fflow* fl, void* data, const char* name,
        void* (*allocate)(void*), void (*cleanup)(void*, void*));

/* 1 when the event (a task's or timer's cb and data) is of a flow the host
 * is inside a step of: it waits for that host_done() */
FTN_HIDDEN int feng_event_waits(void (*cb)(void*), void* data);
/* the flow of an event that is a turn of it (its run's generation in *gen),
 * else NULL; after that event ran on its own (run_one()), feng_event_after()
 * lets the branches the turn started take their first bursts in it too */
FTN_HIDDEN fflow* feng_event_flow(void (*cb)(void*), void* data, uint32_t* gen);
FTN_HIDDEN void feng_event_after(fflow* fl, uint32_t gen);
FTN_HIDDEN void fstep_free_allocs(fstep* s);
FTN_HIDDEN void* fstep_stack(fstep* s, size_t size, void (*cleanup)(void*));
FTN_HIDDEN size_t fstep_small_item_size(void);

/* engine entry points used by the API slots */
FTN_HIDDEN fstep* feng_add(fstep* s, int kind, void* data);
/* the step's own data for its host (host_add(), host_follow()), zeroed */
FTN_HIDDEN void* feng_host_data(fstep* s);
FTN_HIDDEN void feng_success(fstep* s, FutoInArgs* args);
FTN_HIDDEN void feng_error(fstep* s, const char* code, const char* info);
FTN_HIDDEN void feng_misuse(fstep* s, const char* what);
FTN_HIDDEN int feng_outer_misuse(fstep* s, const char* slot);
/* a step that waits while its flow already fails there (an error from
 * outside, a Timeout, is pending): nothing may complete it any more */
FTN_HIDDEN int feng_wait_failing(FutoInAsyncSteps* bsi);
FTN_HIDDEN void feng_set_timeout(fstep* s, uint32_t ms);
FTN_HIDDEN void feng_execute(fflow* fl, void* data, FutoInAsyncSteps_error_callback eh);
FTN_HIDDEN void feng_cancel(fflow* fl);
FTN_HIDDEN fflow* feng_flow_new(FutoInAsyncTool* t);
FTN_HIDDEN void feng_flow_free(fflow* fl);
/* Frees pooled flows and strand buffers; the tool is going away. */
FTN_HIDDEN void feng_tool_release(FutoInAsyncTool* t);
FTN_HIDDEN int feng_in_callback(const fstep* s);

static inline fstep* fstep_of(FutoInAsyncSteps* bsi)
{
    return (fstep*)bsi;
}

static inline void fargs_reset(FutoInArgs* a)
{
    for (int i = 0; i < 4; ++i) {
        if (a->args[i].type) {
            futoin_reset_binval(&a->args[i]);
        }
    }
}

/* Zero by fields: a plain memset of 128 bytes becomes `rep stos`. */
static inline void fval_zero(FutoInBinaryValue* v)
{
    v->type = NULL;
    v->u64 = 0;
    v->custom_data = NULL;
    v->length = 0;
}

static inline void fargs_zero(FutoInArgs* a)
{
    fval_zero(&a->arg0);
    fval_zero(&a->arg1);
    fval_zero(&a->arg2);
    fval_zero(&a->arg3);
}

static inline int fargs_empty(const FutoInArgs* a)
{
    return !a->args[0].type && !a->args[1].type && !a->args[2].type && !a->args[3].type;
}

#endif
