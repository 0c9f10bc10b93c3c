// Type declarations of futoin-polyglot: the API of futoin-asyncsteps 2.5
// (FutoIn FTN12 AsyncSteps), run by the futoin-polyglot C core.
//
//   import $as = require('futoin-polyglot');
//   $as().add((as) => as.success(1)).add((as, v: number) => {}).execute();
//
// Names follow the JSDoc of futoin-asyncsteps (ExecFunc, ErrorFunc,
// CancelFunc, LoopFunc, RepeatFunc, ForEachFunc, AsyncTool, AsyncToolTest...).
// The native extras are declared in native.d.ts (futoin-polyglot/native).

import { CStep } from './native';

/**
 * A new root AsyncSteps on the active event tool ($as.ActiveAsyncTool).
 */
declare function $as(): $as.AsyncSteps;

declare namespace $as {
    // ---- callbacks ----

    /**
     * execute_callback (FTN12): a non-blocking step body. It completes by
     * returning (implicit success), as.success(), as.error() (or a throw), or
     * continues with as.add()/as.parallel()/loops; it waits for an external
     * event after as.setTimeout(), as.setCancel() or as.waitExternal().
     * `args` are the values of the previous step's success().
     */
    type ExecFunc = (as: AsyncStepProtector, ...args: any[]) => void;

    /**
     * error_callback (FTN12): do nothing (the error goes on unwinding),
     * as.error() to replace the error, as.success() or as.add() to recover.
     * The details are in as.state.error_info and as.state.last_exception.
     */
    type ErrorFunc = (as: AsyncStepProtector, err: string) => void;

    /** cancel_callback (FTN12): stop the external work of a waiting step. */
    type CancelFunc = (as: AsyncStepProtector) => void;

    /** A loop() body: as.break()/as.continue() end or skip an iteration. */
    type LoopFunc = (as: AsyncStepProtector) => void;

    /** A repeat() body: `i` counts from 0. */
    type RepeatFunc = (as: AsyncStepProtector, i: number) => void;

    /** A forEach() body: index or key, and value. */
    type ForEachFunc<K = any, V = any> = (as: AsyncStepProtector, key: K, value: V) => void;

    /** A Map (structurally, so that no ES2015 lib is needed). */
    interface MapLike<K, V> {
        forEach(callbackfn: (value: V, key: K) => void): void;
        get(key: K): V | undefined;
        has(key: K): boolean;
        readonly size: number;
    }

    /** What add() accepts: a JS step or a C step of futoin-polyglot/native. */
    type Step = ExecFunc | CStep;

    // ---- state ----

    /**
     * The state of a flow, shared by all its steps (branches of parallel()
     * share it too). JS-specific: as.state() === as.state.
     */
    interface State {
        (): State;
        /** error_info given to the last error() (undefined when none) */
        error_info?: any;
        /** the last exception caught: the thrown value or an Error(code) */
        last_exception?: any;
        /** step handlers of the current stack, for debugging (not in production mode) */
        async_stack?: Function[];
        /** any user variable */
        [key: string]: any;
    }

    // ---- steps ----

    /** Methods of both a root AsyncSteps and the step interface. */
    interface AsyncStepsBase {
        /**
         * The flow's state object. On a step interface it reads null once
         * the step ended (as in futoin-asyncsteps); typed for the common use
         * inside the step, so a late callback tests
         * `(as.state as State | null) !== null` before `as.success()`.
         */
        state: State;

        /**
         * Add a sub-step. A C step (native.cstep()) takes its C error handler
         * from cstep(..., {onerror}) or a JS one here, not both.
         */
        add(func: ExecFunc, onerror?: ErrorFunc | null | false): this;
        add(step: CStep, onerror?: ErrorFunc | null | false): this;

        /** Add a step whose branches (added to the result) run quasi-parallel. */
        parallel(onerror?: ErrorFunc | null | false): ParallelStep;

        /** Add a step run while `object` (Mutex, Throttle, Limiter...) is held. */
        sync(object: ISync, func: ExecFunc, onerror?: ErrorFunc | null | false): this;

        /**
         * Raise error `name` (an FTN12 code such as Errors.InvalidRequest or
         * any identifier); `error_info` goes to state.error_info. Throws.
         */
        error(name: string, error_info?: any): never;

        /** Copy the steps and the not yet defined state variables of a model root. */
        copyFrom(other: AsyncSteps): this;

        /** Add a step running `func` until as.break() or an error. */
        loop(func: LoopFunc, label?: any): this;

        /** Add a step running func(as, i) for i in [0, count). */
        repeat(count: number, func: RepeatFunc, label?: any): this;

        /** Add a step running func(as, key, value) for each element. */
        forEach<V>(list: ReadonlyArray<V>, func: ForEachFunc<number, V>, label?: any): this;
        forEach<K, V>(map: MapLike<K, V>, func: ForEachFunc<K, V>, label?: any): this;
        forEach<V>(object: { readonly [key: string]: V }, func: ForEachFunc<string, V>, label?: any): this;

        /** Shortcut for add((as) => as.success(...args)). */
        successStep(...args: any[]): this;

        /**
         * Add a step waiting for `promise`: it succeeds with the resolved
         * value; a rejection raises PromiseReject (an Error reason, kept as
         * state.last_exception) or the rejection reason itself.
         */
        await(promise: PromiseLike<any>, onerror?: ErrorFunc | null | false): this;

        /** A new root AsyncSteps on the same event tool. */
        newInstance(): AsyncSteps;

        /** Always true: duck-typing check across module copies. */
        isAsyncSteps(): boolean;
    }

    /**
     * The interface a step callback receives (futoin-asyncsteps'
     * AsyncStepProtector). Valid while the step is active; a call on it after
     * the step completed throws "InternalError: Unexpected call, object is
     * out of service".
     */
    interface AsyncStepProtector extends AsyncStepsBase {
        /** Complete the step; the values go to the next step. */
        success(...args: any[]): void;

        /** Raise Timeout unless the step completes within `timeout_ms`. */
        setTimeout(timeout_ms: number): this;

        /** Wait for an external event; `oncancel` runs if the step is cancelled. */
        setCancel(oncancel: CancelFunc): this;

        /** Wait for an external success()/error() without a cancel handler. */
        waitExternal(): this;

        /** Leave the innermost loop, or the loop named `label`. Throws. */
        break(label?: any): never;

        /** Next iteration of the innermost loop, or of the loop named `label`. Throws. */
        continue(label?: any): never;
    }

    /** The object parallel() returns: add() its branches. */
    interface ParallelStep {
        add(func: ExecFunc, onerror?: ErrorFunc | null | false): this;
        add(step: CStep, onerror?: ErrorFunc | null | false): this;
        /** Set state.error_info and state.last_exception, then throw (futoin-polyglot extra). */
        error(name: string, error_info?: any): never;
        isAsyncSteps(): boolean;
    }

    /** Root AsyncSteps: add steps, then execute() or promise(). */
    interface AsyncSteps extends AsyncStepsBase {}
    class AsyncSteps {
        /**
         * @param state - initial state object (null: a new callable state)
         * @param async_tool - AsyncTool or AsyncToolTest (default AsyncTool)
         */
        constructor(state?: { [key: string]: any } | null, async_tool?: AsyncTool);

        /** Cancel a running flow: cancel handlers of active steps run, innermost first. */
        cancel(): this;

        /** Start the flow; its first steps run before execute() returns. */
        execute(): this;

        /**
         * Execute and resolve with the first value of the last success(), or
         * reject with Error(code) on an unhandled error.
         */
        promise<T = any>(): Promise<T>;
    }

    // ---- event tools ----

    /** The event scheduler interface (Node timers by default). */
    interface AsyncTool {
        callLater(func: () => void, timeout_ms?: number): any;
        cancelCall(handle: any): void;
        callImmediate(func: () => void): any;
        cancelImmediate(handle: any): void;
    }

    /** A pending event of AsyncToolTest (`f` null: pending flow work). */
    interface AsyncToolTestEvent {
        f: (() => void) | null;
        /** virtual time in ms when it is due */
        t: number;
    }

    /** The test scheduler: events run only when the test asks. */
    interface AsyncToolTest extends AsyncTool {
        callLater(func: () => void, timeout_ms?: number): AsyncToolTestEvent;
        callImmediate(func: () => void, timeout_ms?: number): AsyncToolTestEvent;
        /** Run the next event (without waiting for its time). */
        nextEvent(): void;
        hasEvents(): boolean;
        getEvents(): AsyncToolTestEvent[];
        /** Drop every pending event; running test flows are cancelled. */
        resetEvents(): void;
        /** Run events until none is left. */
        run(): void;
    }

    /** The tool new roots use: AsyncTool, or AsyncToolTest after installAsyncToolTest(). */
    let ActiveAsyncTool: AsyncTool;
    const AsyncTool: AsyncTool;
    const AsyncToolTest: AsyncToolTest;

    /** Install AsyncToolTest as ActiveAsyncTool (false: back to AsyncTool). */
    function installAsyncToolTest(install?: boolean): void;

    /** Throw unless `as` is an AsyncSteps (root, step interface or parallel object). */
    function assertAS(as: unknown): asserts as is AsyncSteps | AsyncStepProtector | ParallelStep;

    /** true when NODE_ENV=production at load: no sanity checks, no async_stack. */
    const isProduction: boolean;

    // ---- errors ----

    /** The FTN12 standard error codes. */
    type ErrorCode =
        | 'ConnectError'
        | 'CommError'
        | 'UnknownInterface'
        | 'NotSupportedVersion'
        | 'NotImplemented'
        | 'Unauthorized'
        | 'InternalError'
        | 'InvokerError'
        | 'InvalidRequest'
        | 'DefenseRejected'
        | 'PleaseReauth'
        | 'SecurityError'
        | 'Timeout'
        | 'LoopBreak'
        | 'LoopCont';

    /** The FTN12 standard error codes as read-only static strings. */
    class Errors {
        static readonly ConnectError: 'ConnectError';
        static readonly CommError: 'CommError';
        static readonly UnknownInterface: 'UnknownInterface';
        static readonly NotSupportedVersion: 'NotSupportedVersion';
        static readonly NotImplemented: 'NotImplemented';
        static readonly Unauthorized: 'Unauthorized';
        static readonly InternalError: 'InternalError';
        static readonly InvokerError: 'InvokerError';
        static readonly InvalidRequest: 'InvalidRequest';
        static readonly DefenseRejected: 'DefenseRejected';
        static readonly PleaseReauth: 'PleaseReauth';
        static readonly SecurityError: 'SecurityError';
        static readonly Timeout: 'Timeout';
        static readonly LoopBreak: 'LoopBreak';
        static readonly LoopCont: 'LoopCont';
    }

    /** The same object as Errors. */
    const FutoInError: typeof Errors;

    // ---- synchronization ----

    /** Base of synchronization objects (FTN12 2.3). */
    class ISync {
        /** Add `func` as a step of `as`, run while this object is held. */
        sync(as: AsyncSteps | AsyncStepProtector, func: ExecFunc, onerror?: ErrorFunc | null | false): void;
    }

    /**
     * At most `max` flows inside at once (re-entrant per flow); others wait
     * in a queue of at most `max_queue` (null: unlimited) or get DefenseRejected.
     */
    class Mutex extends ISync {
        constructor(max?: number, max_queue?: number | null);
    }

    /**
     * At most `max` entries per `period_ms`; others wait in a queue of at most
     * `max_queue` (null: unlimited) or get DefenseRejected.
     */
    class Throttle extends ISync {
        constructor(max: number, period_ms?: number, max_queue?: number | null);
    }

    /** Limiter options (FTN12 defaults). */
    interface LimiterOptions {
        /** flows inside at once (1) */
        concurrent?: number | null;
        /** flows waiting for a concurrency slot (0) */
        max_queue?: number | null;
        /** entries per period (1) */
        rate?: number | null;
        /** the rate period in ms (1000) */
        period_ms?: number | null;
        /** flows waiting for the rate (0) */
        burst?: number | null;
    }

    /** A Mutex and a Throttle in one object. */
    class Limiter extends ISync {
        constructor(options?: LimiterOptions);
    }

    // ---- test aid ----

    /**
     * A mocha-style test function running `func` as a step; with `onerror`
     * the test must fail into it (negative test).
     */
    function testcase(
        func: (this: any, as: AsyncStepProtector) => void,
        onerror?: ErrorFunc,
    ): (this: any, done: (err?: any) => void) => void;
}

export = $as;
