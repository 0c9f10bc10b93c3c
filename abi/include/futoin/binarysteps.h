/*
 * FTN12 v1.14, sections 2.7.2 and 2.7.3: the universal binary AsyncSteps and
 * synchronization interfaces.
 *
 * Written from the specification text; the layout is fixed by the spec
 * (x86-64: FutoInArgs 128 bytes, FutoInHandle 24, FutoInAsyncStepsAPI 200 =
 * 25 pointers, FutoInSyncAPI 16).
 *
 * Contracts of this implementation (futoin-polyglot core) for every slot are
 * documented next to it. "Loop thread" is the thread that runs the tool
 * (futoin_tool_run / futoin_tool_iterate); "any thread" means the call may
 * come from another thread and then only posts to the loop thread and never
 * blocks the caller. Every other slot must be called on the loop thread.
 *
 * A step's `bsi` is valid from the start of its execute callback until the
 * step completes; keep it only while the step waits for an external event.
 */
#ifndef FUTOIN_BINARYSTEPS_H
#define FUTOIN_BINARYSTEPS_H

#include "binaryval.h" /* beside this file, as in the reference */

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__cplusplus) && defined(__clang__)
/* anonymous structs inside anonymous unions: standard C11, an extension in
 * C++ that __extension__ does not quiet for clang++ -pedantic */
#    pragma clang diagnostic push
#    pragma clang diagnostic ignored "-Wnested-anon-types"
#endif

typedef struct FutoInAsyncStepsAPI_ FutoInAsyncStepsAPI;
typedef struct FutoInAsyncSteps_ FutoInAsyncSteps;
typedef struct FutoInSyncAPI_ FutoInSyncAPI;
typedef struct FutoInSync_ FutoInSync;
typedef struct FutoInArgs_ FutoInArgs;
typedef struct FutoInHandle_ FutoInHandle;

/* Up to 4 success arguments. Unused slots have type == NULL. */
struct FutoInArgs_
{
    union
    {
        FUTOIN_ANON struct
        {
            FutoInBinaryValue arg0;
            FutoInBinaryValue arg1;
            FutoInBinaryValue arg2;
            FutoInBinaryValue arg3;
        };
        FutoInBinaryValue args[4];
    };
};

/* Opaque scheduler handle: {node, tool, generation}. Zeroed = invalid. */
struct FutoInHandle_
{
    void* data1;
    void* data2;
    ptrdiff_t data3;
};

/*
 * Execute callback. `args` are the previous step's success values: the engine
 * calls each value's cleanup after this callback returns, unless the callback
 * zeroed the value to keep it (copy to forward it). `args` is never NULL.
 */
typedef void (*FutoInAsyncSteps_execute_callback)(
        FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args);
/* Error callback: read the info with stateVariable(bsi, NULL, "error_info", NULL, NULL). */
typedef void (*FutoInAsyncSteps_error_callback)(
        FutoInAsyncSteps* bsi, void* data, const char* code);
typedef void (*FutoInAsyncSteps_cancel_callback)(
        FutoInAsyncSteps* bsi, void* data);

struct FutoInAsyncStepsAPI_
{
    union
    {
        FUTOIN_ANON struct
        {
            /* Index 0: append a step (loop thread). `f` required; `eh` may be
             * NULL. Legal on a root (any time), inside the step's execute or
             * error callback, and on a parallel() object. On a completed step:
             * InternalError. add() inside an error handler is an implicit
             * success of that handler (spec 1.2.1). */
            void (*add)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh);
            /* Index 1: add a parallel step and return the object to add its
             * branches to (loop thread). `eh` may be NULL. Branches get their
             * own rootId; the first branch failure cancels the others; success
             * args of branches are ignored. */
            FutoInAsyncSteps* (*parallel)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    FutoInAsyncSteps_error_callback eh);
            /* Index 2: per-root state variable (loop thread). On first use
             * `allocate(data)` creates it, the same pointer is returned after,
             * `cleanup(data, value)` runs when the root is freed. With NULL
             * allocate: the existing value or NULL. Special keys (NULL
             * allocate/cleanup, never NULL): "error_info" -> const char*
             * ("" when unset); "last_exception" -> FutoInBinaryValue* slot of
             * the root (wrappers store the caught exception there). */
            void* (*stateVariable)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    const char* name,
                    void* (*allocate)(void* data),
                    void (*cleanup)(void* data, void* value));
            /* Index 3: zeroed, max-aligned memory living as long as the step
             * (through its own error handler); root allocations live with the
             * root (loop thread). `cleanup` may be NULL. */
            void* (*stack)(
                    FutoInAsyncSteps* bsi,
                    size_t data_size,
                    void (*cleanup)(void* value));
            /* Index 4: complete the step (any thread). The values are moved:
             * `*args` is zeroed without cleanup. NULL args = no values. Inside
             * a callback it takes effect when the callback returns; from
             * outside it schedules the continuation, never runs it inline.
             * After add(), twice, or after error: InternalError. */
            void (*success)(FutoInAsyncSteps* bsi, FutoInArgs* args);
            /* Index 5: fail the step (any thread). Both strings are copied;
             * NULL info is stored as "". Inside a callback, return right
             * after calling it. */
            void (*handle_error)(
                    FutoInAsyncSteps* bsi, const char* code, const char* info);
            /* Index 6: Timeout error after timeout_ms unless completed (loop
             * thread). Disables implicit success. */
            void (*setTimeout)(FutoInAsyncSteps* bsi, uint32_t timeout_ms);
            /* Index 7: cancel handler, run innermost first on error unwinding
             * and on cancel, before the same step's error handler (loop
             * thread). `data` may be NULL. Disables implicit success. */
            void (*setCancel)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    FutoInAsyncSteps_cancel_callback ch);
            /* Index 8: disable implicit success (loop thread). */
            void (*waitExternal)(FutoInAsyncSteps* bsi);
            /* Index 9: add a loop step running `f` until breakLoop (loop
             * thread). `label` may be NULL; it is copied. */
            void (*loop)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    void (*f)(FutoInAsyncSteps* bsi, void* data),
                    const char* label);
            /* Index 10: add a step running `f(i)` for i in [0, count). */
            void (*repeat)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    size_t count,
                    void (*f)(FutoInAsyncSteps* bsi, void* data, size_t i),
                    const char* label);
            /* Index 11: raise "LoopBreak" with the label (NULL = innermost
             * loop) as error_info; return right after. Outside a loop or with
             * an unknown label it unwinds like any other error. In a step
             * callback, or on a step waiting for an event (loop thread). */
            void (*breakLoop)(FutoInAsyncSteps* bsi, const char* label);
            /* Index 12: as breakLoop with "LoopCont": next iteration. */
            void (*continueLoop)(FutoInAsyncSteps* bsi, const char* label);
            /* Index 13: schedule the root (loop thread; never runs inline).
             * `data` and `unhandled_error` may be NULL: then an unhandled
             * error is reported on stderr and the flow dropped. Twice while
             * running: the second call's callback gets InternalError. */
            void (*execute)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    FutoInAsyncSteps_error_callback unhandled_error);
            /* Index 14: cancel the root (any thread): cancel handlers of all
             * active steps run innermost first, no error handler runs. */
            void (*cancel)(FutoInAsyncSteps* bsi);
            /* Index 15: add a step whose `f` runs while `sync` is locked. The
             * lock is released on success, error and cancel. `sync` may be
             * any provider of FutoInSyncAPI. */
            void (*addSync)(
                    FutoInAsyncSteps* bsi,
                    FutoInSync* sync,
                    void* data,
                    FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh);
            /* Index 16: the same for every step of one sequential flow,
             * different for each parallel branch (loop thread). */
            ptrdiff_t (*rootId)(FutoInAsyncSteps* bsi);
            /* Index 17: 1 while usable, as the C++ reference's bool cast: a
             * root while it is not executing (before execute(), after its
             * flow ended), a step while it runs innermost (its callback, its
             * error handler, waiting); 0 while its sub-steps run and once it
             * ended or was freed (loop thread). */
            int (*isValid)(FutoInAsyncSteps* bsi);
            /* Index 18: a new root on the same tool (loop thread). */
            FutoInAsyncSteps* (*newInstance)(FutoInAsyncSteps* bsi);
            /* Index 19: free a root (any thread: from another one it is
             * posted to the loop thread); a running root is cancelled first.
             * A non-root pointer: ignored with a report on stderr. */
            void (*free)(FutoInAsyncSteps* bsi);
            /* Index 20: scheduler immediate (any thread: from another one
             * it is posted, its handle usable from any thread). */
            FutoInHandle (*sched_immediate)(
                    FutoInAsyncSteps* bsi, void* data, void (*cb)(void* data));
            /* Index 21: scheduler timer (any thread, as index 20; the delay
             * counts from when the loop takes the post). */
            FutoInHandle (*sched_deferred)(
                    FutoInAsyncSteps* bsi,
                    uint32_t delay_ms,
                    void* data,
                    void (*cb)(void* data));
            /* Index 22: cancel; safe after the callback ran (any thread:
             * the callback does not start after this returns, though from
             * another thread it may be running on the loop thread already;
             * the loop lets go of a cancelled timer at its next turn). */
            void (*sched_cancel)(FutoInAsyncSteps* bsi, FutoInHandle* handle);
            /* Index 23: 1 while still scheduled (as index 22). */
            int (*sched_is_valid)(FutoInAsyncSteps* bsi, FutoInHandle* handle);
            /* Index 24: 1 on the thread running the tool (any thread). */
            int (*is_same_thread)(FutoInAsyncSteps* bsi);
        };
        void* funcs[25];
    };
    /* NOTE: extendable by implementation */
};

struct FutoInAsyncSteps_
{
#ifdef __cplusplus
    FutoInAsyncSteps_(const FutoInAsyncStepsAPI* api) noexcept : api(api) {}
#endif
    const FutoInAsyncStepsAPI* const api;
    /* NOTE: extendable by implementation */
};

/*
 * Sync protocol: addSync() runs lock(bsi, sync) as an execute callback of an
 * internal step: returning means acquired (implicit success), waitExternal()
 * + later success(bsi) means acquired after waiting, handle_error() rejects.
 * unlock(bsi, sync) runs once the protected step ends, however it ends, with
 * a bsi of the same flow (same rootId).
 */
struct FutoInSyncAPI_
{
    union
    {
        FUTOIN_ANON struct
        {
            /* Index 0 */
            void (*lock)(FutoInAsyncSteps* bsi, FutoInSync* sync);
            /* Index 1 */
            void (*unlock)(FutoInAsyncSteps* bsi, FutoInSync* sync);
        };
        void* funcs[2];
    };
    /* NOTE: extendable by implementation */
};

struct FutoInSync_
{
#ifdef __cplusplus
    FutoInSync_() noexcept : api(nullptr) {}
#endif
    const FutoInSyncAPI* const api;
    /* NOTE: extendable by implementation */
};

#if defined(__cplusplus) && defined(__clang__)
#    pragma clang diagnostic pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
FUTOIN_STATIC_ASSERT(sizeof(FutoInArgs) == 128, "FutoInArgs layout");
FUTOIN_STATIC_ASSERT(sizeof(FutoInHandle) == 24, "FutoInHandle layout");
FUTOIN_STATIC_ASSERT(sizeof(FutoInAsyncStepsAPI) == 200, "FutoInAsyncStepsAPI layout");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, is_same_thread) == 192, "FutoInAsyncStepsAPI slot 24");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, free) == 152, "FutoInAsyncStepsAPI slot 19");
FUTOIN_STATIC_ASSERT(sizeof(FutoInSyncAPI) == 16, "FutoInSyncAPI layout");
FUTOIN_STATIC_ASSERT(sizeof(FutoInAsyncSteps) == 8, "FutoInAsyncSteps layout");
#endif

#endif /* FUTOIN_BINARYSTEPS_H */
