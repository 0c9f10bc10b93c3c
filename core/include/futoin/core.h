/*
 * futoin-polyglot core: the entry points that create tools, roots and sync
 * objects and drive the loop. Everything else is reached through the FTN12
 * binary interface (futoin/binarysteps.h).
 *
 *   cc -std=c11 app.c -lfutoin_polyglot -lpthread
 */
#ifndef FUTOIN_CORE_H
#define FUTOIN_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <futoin/binarysteps.h>
#include <futoin/binaryval.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#    define FUTOIN_API
#else
#    define FUTOIN_API __attribute__((visibility("default")))
#endif

#define FUTOIN_ABI_VERSION 1
#define FUTOIN_VERSION_STRING "0.1.0"

/* FTN12 standard error codes */
#define FUTOIN_ERR_CONNECT_ERROR "ConnectError"
#define FUTOIN_ERR_COMM_ERROR "CommError"
#define FUTOIN_ERR_UNKNOWN_INTERFACE "UnknownInterface"
#define FUTOIN_ERR_NOT_SUPPORTED_VERSION "NotSupportedVersion"
#define FUTOIN_ERR_NOT_IMPLEMENTED "NotImplemented"
#define FUTOIN_ERR_UNAUTHORIZED "Unauthorized"
#define FUTOIN_ERR_INTERNAL_ERROR "InternalError"
#define FUTOIN_ERR_INVOKER_ERROR "InvokerError"
#define FUTOIN_ERR_INVALID_REQUEST "InvalidRequest"
#define FUTOIN_ERR_DEFENSE_REJECTED "DefenseRejected"
#define FUTOIN_ERR_PLEASE_REAUTH "PleaseReauth"
#define FUTOIN_ERR_SECURITY_ERROR "SecurityError"
#define FUTOIN_ERR_TIMEOUT "Timeout"
#define FUTOIN_ERR_LOOP_BREAK "LoopBreak"
#define FUTOIN_ERR_LOOP_CONT "LoopCont"
#define FUTOIN_ERR_PROMISE_REJECT "PromiseReject"

typedef struct FutoInAsyncTool_ FutoInAsyncTool;

typedef struct FutoInLimiterOptions_
{
    uint32_t concurrent; /* default 1 */
    uint32_t max_queue;  /* default 0 */
    uint32_t rate;       /* default 1 */
    uint32_t period_ms;  /* default 1000 */
    uint32_t burst;      /* default 0 */
} FutoInLimiterOptions;

/* Fills the spec defaults. */
FUTOIN_API void futoin_limiter_options_init(FutoInLimiterOptions* opts);

/* ---- tool (scheduler + built-in driver) ---- */

/* A new tool bound to the calling thread. NULL on allocation failure. */
FUTOIN_API FutoInAsyncTool* futoin_tool_new(void);
/* Frees the tool; roots and sync objects of it must be freed before. If
 * some are not, that is reported on stderr and the tool goes with the last
 * of them (meanwhile it runs nothing and makes no new roots; a root freed
 * from another thread then is freed there, so free those one at a time).
 * Inside its own callbacks it is refused with a report. */
FUTOIN_API void futoin_tool_free(FutoInAsyncTool* tool);
/* Runs until no immediate or timer remains and no futoin_tool_ref() is held.
 * Blocks (without spinning) while only timers or references remain. Returns
 * 0, or -1 when called from inside the tool's own callbacks. */
FUTOIN_API int futoin_tool_run(FutoInAsyncTool* tool);

/* The blocking half of run(), for drivers that must release a lock (such as
 * Python's GIL) while waiting: sleeps until the next timer, a post from
 * another thread, an unref, or max_ms (-1: no limit). Returns 0 when there
 * may be work (call iterate), -1 when nothing can ever come (no immediate,
 * timer, reference or post). Never runs callbacks. */
FUTOIN_API int futoin_tool_wait(FutoInAsyncTool* tool, int64_t max_ms);

/* Keep futoin_tool_run() alive while completions from other threads are
 * expected (any thread). Every ref needs one unref. */
FUTOIN_API void futoin_tool_ref(FutoInAsyncTool* tool);
FUTOIN_API void futoin_tool_unref(FutoInAsyncTool* tool);

/* Runs fn(data) on the loop thread at its next turn (iterate, run), or at
 * the latest when the tool is freed (also posts made meanwhile, up to 100
 * rounds of them); callable from any thread, waking a sleeping run() or the
 * host loop. 0, or -1 out of memory (fn never runs). */
FUTOIN_API int futoin_tool_post(FutoInAsyncTool* tool, void (*fn)(void* data), void* data);

/* Steps one flow may run before the next flow gets its turn (default 100). */
FUTOIN_API void futoin_tool_set_burst(FutoInAsyncTool* tool, uint32_t steps);
/* The burst in force (0 for a NULL tool). */
FUTOIN_API uint32_t futoin_tool_burst(const FutoInAsyncTool* tool);

/* Clock in milliseconds; default CLOCK_MONOTONIC. Set before use. */
typedef uint64_t (*futoin_clock_fn)(void* data);
FUTOIN_API void futoin_tool_set_clock(FutoInAsyncTool* tool, futoin_clock_fn now, void* data);
/* Virtual time: the clock only moves by futoin_tool_advance() or, when the
 * tool has nothing else to do, by run()/iterate() jumping to the next
 * deadline (also after 10,000 iterate() turns in a row that found work while
 * a timer waited: an endless loop a timer is to stop). Timers fire in
 * deadline order, equal deadlines in setting order. */
FUTOIN_API void futoin_tool_use_virtual_time(FutoInAsyncTool* tool);
FUTOIN_API void futoin_tool_advance(FutoInAsyncTool* tool, uint64_t ms);
FUTOIN_API uint64_t futoin_tool_now(FutoInAsyncTool* tool);

/* Host loop integration: when set, `arm(data, delay_ms)` is called on the loop
 * thread whenever the next wake-up changes (-1: nothing pending, 0: ready
 * work), and `wakeup(data)` from any thread when work was posted from another
 * thread. The host then calls futoin_tool_iterate() on the loop thread. */
typedef struct FutoInLoopHooks_
{
    void* data;
    void (*arm)(void* data, int64_t delay_ms);
    void (*wakeup)(void* data);
} FutoInLoopHooks;
/* Set NULL before the host loop goes away: a timer stopped outside a turn
 * (a cancel() or free() from the host's code) calls arm() at once. */
FUTOIN_API void futoin_tool_set_hooks(FutoInAsyncTool* tool, const FutoInLoopHooks* hooks);
/* Non-blocking: runs due timers and at most `max_tasks` immediates (0 = the
 * ones ready at the call). Returns the delay in ms until the next work: 0
 * ready now, -1 nothing pending. Inside the tool's own callbacks, and while
 * the host holds a step it took (host_next() without host_done() yet), it
 * runs nothing and returns 0; so does futoin_tool_run() (returns -1). */
FUTOIN_API int64_t futoin_tool_iterate(FutoInAsyncTool* tool, uint32_t max_tasks);
/* The same, with the timers due by `until` only (a time of the tool's
 * clock): a host loop turn outside its timers phase fires those due when
 * the loop iteration began, as Node's timers, not one set in that turn. */
FUTOIN_API int64_t futoin_tool_iterate_until(FutoInAsyncTool* tool, uint32_t max_tasks, uint64_t until);
/* The same without timers: a host loop whose timers fire in a phase of
 * their own (Node's) runs the work that became ready meanwhile with it. */
FUTOIN_API int64_t futoin_tool_iterate_ready(FutoInAsyncTool* tool, uint32_t max_tasks);
/* The other half: the due timers alone, with what they finish in their
 * event (a parallel's handlers after a branch's step timeout), as a timers
 * phase of the host loop; ready immediates wait for their own phase. */
FUTOIN_API int64_t futoin_tool_iterate_timers(FutoInAsyncTool* tool);
/* Whether immediates (or posts) wait to run, timers aside. */
FUTOIN_API int futoin_tool_has_ready(FutoInAsyncTool* tool);
/* Whether a flow left steps for a later turn since the last call (and
 * forget it): after a step timeout's error handlers, the steps after them
 * wait for the next turn, as after any completion from outside (the JS
 * library goes on through callImmediate() there). A host whose turns run
 * ready work in rounds ends its turn there. */
FUTOIN_API int futoin_tool_take_deferred(FutoInAsyncTool* tool);
/* The root of the oldest flow that left steps so since the last call (taken
 * off that list; NULL when none), before futoin_tool_take_deferred(), which
 * forgets the rest: a host that goes on with each flow in an event of its
 * own (the JS library's callImmediate() per flow) queues them in order. */
FUTOIN_API FutoInAsyncSteps* futoin_tool_take_deferred_root(FutoInAsyncTool* tool);
/* Runs exactly one event without blocking: the oldest ready immediate, or
 * else the earliest timer if it is due (in virtual time the clock moves to
 * it). Returns 1 when something ran. For test schedulers stepping through
 * events one by one. While the host holds a step it took with host_next(),
 * the events of that step's flow (a turn of it, a step timeout) wait for
 * that host_done(): the next other event runs, 0 when none is left. */
FUTOIN_API int futoin_tool_run_one(FutoInAsyncTool* tool);
/* The steps the host took with host_next()/host_next_of() and has not
 * reported done: while not 0, it runs inside a step's callback. */
FUTOIN_API uint32_t futoin_tool_host_taken(const FutoInAsyncTool* tool);
/* 1 inside one of the tool's events (run(), iterate() or run_one() is on the
 * stack): they run nothing nested then; 0 otherwise. */
FUTOIN_API int futoin_tool_in_event(const FutoInAsyncTool* tool);
/* Inside a sched_immediate()/sched_deferred() callback of the tool's own
 * scheduler: the rest of that callback runs as outside any event, so a
 * flow it executes takes its first burst at once (execute_burst()) and
 * run_one() runs the next event nested, as the JS reference's AsyncToolTest
 * runs its events; the event in progress was already taken off its queue.
 * Returns what futoin_tool_event_close() restores when the callback ends.
 * Never around a step's callbacks (a cancel handler, an error handler). */
FUTOIN_API int futoin_tool_event_open(FutoInAsyncTool* tool);
FUTOIN_API void futoin_tool_event_close(FutoInAsyncTool* tool, int token);
/* Same meaning as iterate's return, without running anything. */
FUTOIN_API int64_t futoin_tool_next_delay(FutoInAsyncTool* tool);
/* Make the calling thread the loop thread. */
FUTOIN_API void futoin_tool_bind_thread(FutoInAsyncTool* tool);

/* Allocator hook (process-wide). Set it before creating any tool. */
typedef struct FutoInAllocator_
{
    void* (*malloc_fn)(size_t size);
    void* (*realloc_fn)(void* ptr, size_t size);
    void (*free_fn)(void* ptr);
} FutoInAllocator;
FUTOIN_API void futoin_set_allocator(const FutoInAllocator* alloc);

FUTOIN_API const char* futoin_version(void);
FUTOIN_API int futoin_abi_version(void);

/* ---- roots ---- */

/* A root; release it with bsi->api->free(bsi). Any thread: made on
 * another one than the loop thread, it has memory of its own (the tool's
 * pool is the loop thread's); its steps are added and run on the loop
 * thread as any root's. From another thread, the slots that build or
 * run a flow (add(), parallel(), the loops, addSync(), execute()) are
 * reported on stderr and ignored; success(), handle_error(), cancel()
 * and free() go to the loop thread as posts, and the scheduler slots
 * (sched_*) work from any thread as the C++ reference's AsyncTool. */
FUTOIN_API FutoInAsyncSteps* futoin_steps_new(FutoInAsyncTool* tool);
/* Run the first burst of an executed root now, on the loop thread, the way
 * the JS reference's execute() does; the ABI execute() only schedules. Does
 * nothing (returns 0) inside the tool's own callbacks, on another thread, or
 * when the root is not waiting for its first turn. Returns 1 when it ran. */
FUTOIN_API int futoin_steps_execute_burst(FutoInAsyncSteps* root);
/* The same, also while the host runs a step it took with host_next() (the
 * JS reference runs a flow executed inside a step at once, nested). */
FUTOIN_API int futoin_steps_execute_nested(FutoInAsyncSteps* root);
/* The same for the strand of `step`, a step of a running flow (the main
 * strand, or a parallel branch), when it is queued to go on (a success()
 * from outside): it goes on now, alone, as the JS reference goes on with an
 * await() in a branch in the promise's reaction. Returns 1 when it ran. */
FUTOIN_API int futoin_steps_execute_strand(FutoInAsyncSteps* step);
/* Host events owed to strands, by ticket: a success() from outside on a
 * waiting step (or futoin_steps_defer_after()) queues its strand with a new
 * ticket, which futoin_steps_owed(step) tells right after; claim_queued()
 * gives one to root's queued strands that have none (0: none had to be
 * claimed). The host's event for a ticket calls execute_owed(): the same as
 * execute_burst() for the strand still queued with that ticket, else
 * nothing (it went on by another way, its branch was cancelled), as the JS
 * reference's callImmediate() per completion finds nothing to do then.
 * Returns 1 when it ran. Tickets are 31-bit, never 0. */
FUTOIN_API uint32_t futoin_steps_owed(FutoInAsyncSteps* step);
FUTOIN_API uint32_t futoin_steps_claim_queued(FutoInAsyncSteps* root);
/* 1 when a strand of root's running flow is queued with no ticket (the host
 * then claims one for it, or leaves it to its next turn), 0 else. */
FUTOIN_API int futoin_steps_has_queued(FutoInAsyncSteps* root);
FUTOIN_API int futoin_steps_execute_owed(FutoInAsyncSteps* root, uint32_t ticket);
/* 1 when `step` waits as the last thing its flow has to do: on the main
 * sequence, with nothing queued after it or after any step it is nested in
 * (plain steps only, no loop, parallel or sync section around it), so its
 * completion only ends the flow; 0 else. A host whose reference ends such a
 * flow inside the completing call (no event left) runs its owed strand at once. */
FUTOIN_API int futoin_steps_only_ends_flow(FutoInAsyncSteps* step);
/* In a cancel handler of `step`: the error code whose unwinding runs it (a
 * Timeout, an error from outside), or that of the parallel branch whose
 * failure cancels it; NULL when a cancel() runs it (or anywhere else). */
FUTOIN_API const char* futoin_steps_unwinding(FutoInAsyncSteps* step);
/* In a cancel or error handler of `step`, or at the end of root `step`'s
 * flow: 1 the first time the error that unwinds came out of a parallel
 * branch (the reference raises it on the parallel step anew, with a new
 * exception), 0 else; it tells each crossing once. */
FUTOIN_API int futoin_steps_take_error_crossed(FutoInAsyncSteps* step);
/* The strands of root's flow that wait with an error to unwind (raised on
 * one of its steps from outside, or a parallel branch that failed) run now,
 * newest first, until none is left (at most a burst of them): a host runs
 * the handlers of such an error inside the call that raised it. Each stops
 * before its next step, which waits for a turn as after any completion from
 * outside; one that reaches a host handler leaves it to the host
 * (host_peek_of() tells, host_done_unwinding() reports it done). 0: none
 * ran (none waits, or inside the tool's callbacks). */
FUTOIN_API int futoin_steps_unwind_now(FutoInAsyncSteps* root);
/* 1 when a parallel step of root's flow failed (a branch's error nobody
 * handled) since the last call. The parallel's handlers run before work
 * queued earlier, at once after a host step that failed it; a host that ran
 * a branch from outside (execute_strand()) runs them with unwind_now(), as
 * the JS reference does inside the call that resumed the branch, and leaves
 * the steps after them to a later event. */
FUTOIN_API int futoin_steps_parallel_failed(FutoInAsyncSteps* root);
/* A running flow with nothing left to run (its innermost step completed by
 * a success() from outside, no enclosing step or the root has more steps)
 * ends now instead of on its next turn: its done hook runs, root is idle
 * again, as in the JS reference where such a success() ends the flow.
 * Runs no step. Returns 1 when it ended, 0 otherwise (also inside the
 * tool's own callbacks or on another thread). */
FUTOIN_API int futoin_steps_finish_done(FutoInAsyncSteps* root);
/* 1 when root's flow runs but none of its steps is in progress on its main
 * strand (between two root-level steps, the last one completed from outside
 * or not begun yet): the JS reference's add() on such a root appends to the
 * running flow, and add() on a running root appends to its queue here too. */
FUTOIN_API int futoin_steps_at_top(FutoInAsyncSteps* root);
/* 1 when root's flow runs and goes on only on a later turn of its tool: its
 * next step is queued (a step completed from outside, a new or yielded
 * burst), none of its callbacks runs and it waits for no event. The JS
 * reference cancels such a flow on an error raised on its root. */
FUTOIN_API int futoin_steps_goes_on_later(FutoInAsyncSteps* root);
/* An error raised from outside on the step root's running flow waits at:
 * the innermost step of its main sequence (a step waiting for an event, to
 * enter a sync object, or for its parallel branches), as the JS reference's
 * error() on a running root fails its flow. `at` may also be a step whose
 * sub-steps run: then the innermost step of its own sequence, which may be
 * a parallel branch (as the reference's error() on a branch's root).
 * Returns 1 when raised (the handlers run as after handle_error() on that
 * step), 0 when the flow waits at no such step (idle, inside a callback,
 * ready to go on, already failing) or on another thread. */
FUTOIN_API int futoin_steps_fail_waiting(FutoInAsyncSteps* at, const char* code, const char* info);
/* `done(root, data)` runs right after the last step of each run of root's
 * flow that completes (not on an unhandled error, nor on cancel); it may
 * free root. NULL clears it. Saves a last step that only reports the end. */
FUTOIN_API void futoin_steps_set_done(FutoInAsyncSteps* root, void (*done)(FutoInAsyncSteps* root, void* data),
                                      void* data);
/* `cancelled(root, data)` runs once each time a running flow of root is
 * cancelled (cancel() from anywhere, free() of a running root), after its
 * cancel handlers; a wrapper settles its promise there. It may free root.
 * NULL clears it. */
FUTOIN_API void futoin_steps_set_cancelled(FutoInAsyncSteps* root,
                                           void (*cancelled)(FutoInAsyncSteps* root, void* data), void* data);

/* One pointer a host keeps per root, that any bsi of its flow (a step, a
 * branch, the root) reads at once: a script runtime's per-flow context for
 * its callbacks, without a stateVariable() lookup per step. NULL at first
 * and for a foreign pointer; the host sets it again for each run it wants
 * it in and keeps what it points to alive meanwhile. */
FUTOIN_API void futoin_steps_set_host_data(FutoInAsyncSteps* root, void* data);
FUTOIN_API void* futoin_steps_host_data(FutoInAsyncSteps* bsi);

/* Steps run by the host. A script runtime for which calling in is costly
 * names its execute callback here; plain steps with that callback are then
 * not called by the engine: their strand waits, and the host takes them one
 * by one with host_next() (bsi, data and the values received, valid until
 * host_done()), runs them itself as their execute callback (success(),
 * add(), handle_error() ... act as inside the callback) and reports with
 * host_done(), which goes on with that flow at once. Between the two the host
 * is inside a step callback: execute_burst() does nothing, nothing else of
 * that flow runs (host_next() skips its other steps, host_next_of() gives
 * none, its timeouts and turns wait) and iterate() runs nothing. A
 * host_done() of a step not taken (twice, or of a step still queued) is
 * reported and ignored. Loop thread only; a
 * host that sets this must take every such step after each call that runs
 * flows (execute_burst, iterate, run_one, host_done). */
FUTOIN_API void futoin_tool_set_host_exec(FutoInAsyncTool* tool, FutoInAsyncSteps_execute_callback f);
/* Called on the loop thread just before a step the engine calls itself (a
 * C step) gets values: a host whose values point into memory it manages (a
 * JS typed array that may shrink or be detached meanwhile) makes them
 * current there. NULL clears it. */
FUTOIN_API void futoin_tool_set_args_hook(FutoInAsyncTool* tool, void (*hook)(void* ctx, FutoInArgs* args),
                                          void* ctx);
FUTOIN_API int futoin_tool_host_pending(FutoInAsyncTool* tool);
FUTOIN_API FutoInAsyncSteps* futoin_tool_host_next(FutoInAsyncTool* tool, void** data, const FutoInArgs** args);
FUTOIN_API void futoin_tool_host_done(FutoInAsyncSteps* bsi);
/* host_done() of a handler taken while unwinding an error raised from
 * outside (futoin_steps_unwind_now()): its strand goes on to outer
 * handlers, and stops before its next step (a turn of its own). */
FUTOIN_API void futoin_tool_host_done_unwinding(FutoInAsyncSteps* bsi);
/* on: a strand that host_done() goes on with puts its next host step first
 * in the queue, so a sequence of host steps runs as one burst (the JS
 * reference's order: a flow, or a parallel branch, runs until it waits
 * before the next one gets a turn), and the parallel branches it starts run
 * their first bursts next, one at a time (the reference starts them inside
 * the parallel step; at most a burst's worth of branches per call). Off
 * (the default): each host step queues behind the others, round-robin. */
FUTOIN_API void futoin_tool_set_host_bursts(FutoInAsyncTool* tool, int on);
/* The JS reference's burst owner (g_burst_owner), for a host that follows
 * it. takes(ctx, root, branch) is called when a strand of root's flow goes
 * on from an event of its own (a turn, execute_burst(), execute_owed();
 * not a parallel branch's first burst, which is its parallel's, nor a step
 * timeout's handlers): branch is 0 for the main sequence, else the key of
 * the parallel branch (futoin_steps_branch_key()). owns(ctx, root, branch)
 * is asked when a step timeout fires: nonzero, and the steps after its
 * error handlers run in the timer's event too, as the reference goes on
 * inside its timer callback for the owner; otherwise, and with no hooks
 * (NULL, the default), they go on in a later event. */
FUTOIN_API void futoin_tool_set_burst_owner(FutoInAsyncTool* tool,
        void (*takes)(void* ctx, FutoInAsyncSteps* root, uint32_t branch),
        int (*owns)(void* ctx, FutoInAsyncSteps* root, uint32_t branch), void* ctx);
/* As execute_burst() for the strand of root's flow with that key (0: its
 * main sequence, else a branch's, futoin_steps_branch_key()) when the
 * handlers of an error from outside just left it queued, with no event on
 * its way to it: the one that owns the burst goes on in the call that raised
 * the error (on it, or on a branch of a parallel it runs). Returns 1 when it
 * ran. */
FUTOIN_API int futoin_steps_execute_key(FutoInAsyncSteps* root, uint32_t key);
/* 0 for a step of a flow's main sequence (or no step of this library), else
 * the key (1 .. 2^30) of the parallel branch it is a step of. */
FUTOIN_API uint32_t futoin_steps_branch_key(FutoInAsyncSteps* bsi);
/* host_next() for one flow: the first step waiting for the host of the flow
 * of `root` (NULL: none), so a host can run a nested flow alone. When none
 * waits, the parallel branches the flow started and nothing ran yet run
 * their first bursts first (newest parallel first, then in order; at most a
 * burst's worth per call), as the reference runs them inside execute(). */
FUTOIN_API FutoInAsyncSteps* futoin_tool_host_next_of(FutoInAsyncSteps* root, void** data, const FutoInArgs** args);
/* FUTOIN_HOST_* of the step host_next_of() would hand over next, left in
 * the queue (-1: none waits), so a host running the handlers of an error
 * raised from outside can stop before the steps after them. */
FUTOIN_API int futoin_tool_host_peek_of(FutoInAsyncSteps* root);

/* Loop and repeat bodies run by the host, the same way: each iteration of a
 * loop()/repeat() made with these callbacks is taken with host_next() (no
 * values) and reported with host_done(). futoin_tool_host_kind() tells a
 * taken step from a body and gives a repeat body its iteration. NULL turns
 * either off. */
FUTOIN_API void futoin_tool_set_host_loops(
        FutoInAsyncTool* tool,
        void (*loop)(FutoInAsyncSteps* bsi, void* data),
        void (*repeat)(FutoInAsyncSteps* bsi, void* data, size_t i));
/* Error handlers run by the host, the same way: a handler with this
 * callback is taken with host_next() (no values) when it is due, gets its
 * error code from futoin_tool_host_error(), and acts as inside the callback
 * (success(), add(), handle_error()) before host_done(). */
FUTOIN_API void futoin_tool_set_host_error(FutoInAsyncTool* tool, FutoInAsyncSteps_error_callback eh);
#define FUTOIN_HOST_STEP 0
#define FUTOIN_HOST_LOOP 1
#define FUTOIN_HOST_REPEAT 2
#define FUTOIN_HOST_ERROR 3
/* the error code a taken error handler handles; NULL for anything else */
FUTOIN_API const char* futoin_tool_host_error(FutoInAsyncSteps* bsi);
/* FUTOIN_HOST_* of a step taken with host_next(); *iter (may be NULL) gets a
 * repeat body's iteration. -1 for anything else. */
FUTOIN_API int futoin_tool_host_kind(FutoInAsyncSteps* bsi, size_t* iter);

/* A step run by the host can keep its data inside the step itself: no
 * allocation per step. host_add(): add() of a step with the host execute
 * callback (set_host_exec) and `eh`, whose data is FUTOIN_HOST_DATA_SIZE
 * zeroed bytes of its own; the tool's host cleanup (set_host_cleanup, may
 * be NULL) gets them when the step is released, however it ended. Returns
 * the data; NULL when add() refused (reported as add() reports) or no host
 * execute callback is set. */
#define FUTOIN_HOST_DATA_SIZE 24
FUTOIN_API void futoin_tool_set_host_cleanup(FutoInAsyncTool* tool, void (*cleanup)(void* data));
FUTOIN_API void* futoin_tool_host_add(FutoInAsyncSteps* bsi, FutoInAsyncSteps_error_callback eh);

/* A host may run several plain steps of its own as one host step (a batch
 * the engine knows as one step). host_budget(): the steps the strand of the
 * taken step or loop body bsi may still run in this burst; host_spend(): the
 * host ran `steps` more as part of bsi, so they use up the burst as engine
 * steps would. host_follow(): a step with bsi's execute callback, no error
 * handler, queued right after bsi (the rest of the batch when one of its
 * steps did more than complete), with data of its own as host_add() gives.
 * Returns the data, NULL (nothing queued) when bsi is not a plain step
 * taken with host_next() or memory ran out. */
/* A taken loop or repeat body may run further iterations of its loop as
 * part of itself while each completes at once (a batch of iterations).
 * host_loop_room(): how many, after this one: the burst left, and for a
 * repeat the iterations left (0 for anything but a taken body).
 * host_loop_ran(): it ran `k` of them (at most the room): they use up the
 * burst and the loop goes on past them; bsi is then the last one run (its
 * iteration, a break or continue from it). */
FUTOIN_API uint32_t futoin_tool_host_loop_room(FutoInAsyncSteps* bsi);
FUTOIN_API void futoin_tool_host_loop_ran(FutoInAsyncSteps* bsi, uint32_t k);
FUTOIN_API uint32_t futoin_tool_host_budget(FutoInAsyncSteps* bsi);
FUTOIN_API void futoin_tool_host_spend(FutoInAsyncSteps* bsi, uint32_t steps);
FUTOIN_API void* futoin_tool_host_follow(FutoInAsyncSteps* bsi);

/* 1 when the executing flow of `root` can go on only by a call on one of
 * its steps from its host: every sequence of it waits in a plain step or
 * loop body the host runs (set_host_exec, set_host_loops), with no timer on
 * it or an outer step, none is ready, queued for the host or inside a
 * callback, and no sync object holds a step of it. Then each(ctx, data)
 * (may be NULL) hears of the data of every host callback the flow keeps:
 * of its steps, loops and error handlers that the host runs, queued or
 * active, and of the cancel handlers whose callback is `cancel` (the same
 * data may come more than once). 0 (nothing called) otherwise, also for a
 * foreign or finished root and off the loop thread. */
FUTOIN_API int futoin_steps_host_idle(FutoInAsyncSteps* root, FutoInAsyncSteps_cancel_callback cancel,
                                      void (*each)(void* ctx, void* data), void* ctx);

/* A host that runs its steps as plain callbacks of its own (not through
 * host_next()) names them: futoin_steps_idle_in() is futoin_steps_host_idle()
 * with steps, error handlers, loop and repeat bodies and cancel handlers
 * whose callback is the one given here (NULL members match nothing but
 * `exec`, which must be set) taken as the host's. */
typedef struct FutoInIdleHost
{
    FutoInAsyncSteps_execute_callback exec;
    FutoInAsyncSteps_error_callback eh;
    void (*loop)(FutoInAsyncSteps* bsi, void* data);
    void (*repeat)(FutoInAsyncSteps* bsi, void* data, size_t i);
    FutoInAsyncSteps_cancel_callback cancel;
} FutoInIdleHost;
FUTOIN_API int futoin_steps_idle_in(FutoInAsyncSteps* root, const FutoInIdleHost* host,
                                    void (*each)(void* ctx, void* data), void* ctx);

/* 1 when bsi is the innermost active step of its sequence (its callback or
 * error handler runs, or it waits), 0 when steps it added run, it is not
 * active, or bsi is not a step of this library: a host tells by it a call
 * on an outer step's interface (out of bounds while its sub-steps run). */
FUTOIN_API int futoin_steps_is_top(FutoInAsyncSteps* bsi);
/* For a step whose callback runs (1; else 0, nothing done): once the
 * callback returns, its flow goes on in a later event, not in this burst,
 * as after a completion from outside. A host calls it when another flow's
 * step completed the step from inside its callback (a flow executed there),
 * where the JS reference goes on through callImmediate(). */
FUTOIN_API int futoin_steps_defer_after(FutoInAsyncSteps* bsi);
/* 1 when bsi is a step of this library that waits for an event from outside
 * (its callback returned; no success() or error reached it since): a host
 * drops a late completion of a promise it awaits, as the JS library does,
 * once an error from outside moved the step on. */
FUTOIN_API int futoin_steps_is_waiting(FutoInAsyncSteps* bsi);
/* 1 when bsi is a step of this library whose sub-steps (added by its
 * callback or its error handler) are queued or running: a success() or
 * error() from outside has nothing to complete there (a host throws at the
 * call instead of letting the engine ignore it) */
FUTOIN_API int futoin_steps_runs_substeps(FutoInAsyncSteps* bsi);
/* 1 when bsi is a step of this library inside a parallel branch (not of
 * its flow's main sequence): an error raised on the root while the flow
 * waits there fails the parallel step, as in the JS reference, where each
 * branch runs as a root of its own. */
FUTOIN_API int futoin_steps_in_branch(FutoInAsyncSteps* bsi);
/* 1 when bsi is a root of this library (not freed), 0 for any other bsi of
 * it (a step, a parallel branch), -1 for a foreign pointer: a host tells by
 * it what execute() on a bsi it is handed will do. */
FUTOIN_API int futoin_steps_is_root(FutoInAsyncSteps* bsi);
/* The tool of any bsi of this implementation; NULL for a foreign pointer. */
FUTOIN_API FutoInAsyncTool* futoin_steps_tool(FutoInAsyncSteps* bsi);
/* 1 when `bsi` was made by this library. */
FUTOIN_API int futoin_steps_is_native(const FutoInAsyncSteps* bsi);
/* 1 when `bsi` is a step of a flow cancelled (or freed) while a callback
 * of it runs: the cancel takes effect when that callback returns, but its
 * steps are done with; isValid() says 0 for them. */
FUTOIN_API int futoin_steps_is_cancelled(FutoInAsyncSteps* bsi);
/* last_exception (spec 1.7) holds a FutoIn error as its code: a string
 * value of this type, set when the error is raised, unless a value was put
 * there for that very error. A wrapper that puts its exception object there
 * marks it: for_next_error 1 before it raises the error it belongs to (kept
 * even when a value at the same address was there before), 0 when it
 * stands for the current error (a conversion: the next error replaces it). */
FUTOIN_API extern const FutoInType futoin_error_code_type;
FUTOIN_API void futoin_steps_last_exception_mark(FutoInAsyncSteps* bsi, int for_next_error);
/* changes when the engine sets error_info or last_exception (an error, a
 * handled break): a wrapper that mirrors them in a state object of its own
 * refreshes that only then, so what user code wrote there stays until the
 * next error, as in a plain state object */
FUTOIN_API uint32_t futoin_steps_error_gen(FutoInAsyncSteps* bsi);

/* ---- sync primitives ---- */

/* Queue limits are literal: 0 = no waiting allowed (a busy lock raises
 * DefenseRejected at once), FUTOIN_UNLIMITED = no limit (the spec's null).
 * max 0 is taken as 1. NULL on allocation failure. */
#define FUTOIN_UNLIMITED UINT32_MAX
FUTOIN_API FutoInSync* futoin_mutex_new(FutoInAsyncTool* tool, uint32_t max, uint32_t max_queue);
FUTOIN_API FutoInSync* futoin_throttle_new(
        FutoInAsyncTool* tool, uint32_t max, uint32_t period_ms, uint32_t max_queue);
FUTOIN_API FutoInSync* futoin_limiter_new(FutoInAsyncTool* tool, const FutoInLimiterOptions* opts);
/* Frees a primitive made above; while flows still hold it, wait for it or
 * have a sync step naming it queued, it is freed when the last is done. */
FUTOIN_API void futoin_sync_free(FutoInSync* sync);
/* 1 while the period timer of a Throttle (or of a Limiter's rate) runs: an
 * entry was counted in this period or a flow waits; 0 when it is idle. */
FUTOIN_API int futoin_sync_timer_pending(const FutoInSync* sync);
/* A Throttle counts an entry now if its lock() would let the caller in at
 * once (room in this period, nobody waiting): 1. A Throttle has nothing to
 * unlock, so a host that got 1 may run the protected step as a plain
 * sub-step. 0: it would wait, or `sync` is not a Throttle of this library
 * (use sync/addSync as usual). */
FUTOIN_API int futoin_throttle_try_enter(FutoInSync* sync);
/* A Throttle's periods (a Limiter's rate) on a timer of the host's instead
 * of the tool's, for a host whose clock may be a test's fake one: when a
 * period starts (the first entry after an idle time) `start` is called; if
 * it returns 1, the host calls futoin_sync_period_end() every period_ms
 * from then on; 0: the tool's timer runs the period, as without a hook.
 * `sync` is the object the hook was set on. NULL removes the hook. -1 for
 * anything else than a Throttle or Limiter of this library. After
 * futoin_sync_free() the host calls futoin_sync_period_end() no more. Loop
 * thread only. */
FUTOIN_API int futoin_sync_set_period_hook(
        FutoInSync* sync, int (*start)(void* data, FutoInSync* sync, uint32_t period_ms), void* data);
/* The end of a period the host took: entries count from 0 and waiting
 * flows go in. 1 when another period runs (the host's timer goes on), 0
 * when it is idle (the host stops its timer; the next entry calls `start`
 * again), and for a period that is not the host's. */
FUTOIN_API int futoin_sync_period_end(FutoInSync* sync);

/* What a built-in sync primitive holds now, for monitoring and for evicting
 * idle ones (futoin-asyncsteps shows the same in its objects' fields). */
typedef struct FutoInSyncStats
{
    uint32_t inside;           /* Mutex (a Limiter's concurrency): flows inside now */
    uint32_t mutex_waiting;    /* flows queued for the Mutex part */
    uint32_t entries;          /* Throttle (a Limiter's rate): entries counted this period */
    uint32_t throttle_waiting; /* flows queued for the Throttle part */
} FutoInSyncStats;
/* 0 with *stats filled for a Mutex, Throttle or Limiter of this library (the
 * parts it lacks are 0); -1 with *stats zeroed for NULL or any other
 * provider. Loop thread only. */
FUTOIN_API int futoin_sync_stats(const FutoInSync* sync, FutoInSyncStats* stats);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_CORE_H */
