// Type declarations of futoin-polyglot/native: the FTN12 binary interface
// seen from JS. Addresses (C pointers) are BigInts.
//
//   import native = require('futoin-polyglot/native');
//   const step = native.cstep('./libsteps.so', 'my_step', { onerror: 'my_onerror' });
//   $as().add(step).add((as, v) => console.log(v)).execute();

import $as = require('./index');

/** An address: a BigInt (or a safe non-negative integer Number). */
export type Address = bigint | number;

/**
 * A C step: an FTN12 execute callback (FutoInAsyncSteps_execute_callback)
 * and an optional error callback, added with as.add(cstep) like a JS function.
 */
export class CStep {
    constructor(fn: bigint, onerror: bigint, data: bigint);
    /** FutoInAsyncSteps_execute_callback */
    fn: bigint;
    /** FutoInAsyncSteps_error_callback, 0n for none */
    onerror: bigint;
    /** the `data` pointer both callbacks receive */
    data: bigint;
}

export interface CStepOptions {
    /** symbol of the FutoInAsyncSteps_error_callback in the same library */
    onerror?: string;
    /** the `data` pointer passed to the callbacks (default 0n) */
    data?: Address;
}

/**
 * A C step from a shared library (dlopen'ed once and kept loaded).
 * Throws a TypeError when the library or a symbol is not found.
 */
export function cstep(library: string, name: string, options?: CStepOptions): CStep;

/** The address of a C function in a shared library (loaded once, kept). */
export function symbol(library: string, name: string): bigint;

/**
 * The FutoInAsyncSteps* of a root AsyncSteps, a step interface (valid while
 * the step is active) or a parallel object. For a root, its C root is made
 * at once with the steps added so far; later root-level calls go to it at
 * once too, so steps added by C and by JS keep their order.
 */
export function binary(as: $as.AsyncSteps | $as.AsyncStepProtector | $as.ParallelStep): bigint;

/**
 * A JS AsyncSteps over any provider's FutoInAsyncSteps* (a root, or a step
 * inside its callback): JS steps added to it run inside that flow. The
 * caller keeps the pointer valid while the view is used. The address
 * binary() gave for a futoin-polyglot root wraps to that very root.
 */
export function wrap(address: Address): WrappedSteps | $as.AsyncSteps;

/** Whether the FutoInAsyncSteps* was made by this core. */
export function isNative(address: Address): boolean;

/**
 * The FutoInAsyncTool* driving JS flows (test: the AsyncToolTest one), for
 * C code of the same core build creating its own roots.
 */
export function toolAddress(test?: boolean): bigint;

/** The class of wrap() results. */
export class WrappedSteps extends $as.AsyncSteps {
    private constructor();
}

/** A JS sync object in the FTN12 binary protocol, for syncAdapter(). */
export interface BinarySync {
    /** Return to hold the lock; or as.waitExternal() and as.success() later; as.error() rejects. */
    lock(as: $as.AsyncStepProtector): void;
    /** The protected step ended. */
    unlock(as: $as.AsyncStepProtector): void;
}

/**
 * A FutoInSync* made of a JS lock/unlock object, for flows driven from C
 * (addSync). Kept for the life of the process.
 */
export function syncAdapter(obj: BinarySync): bigint;

/** The FutoInSync* of a futoin-polyglot Mutex, Throttle or Limiter, for C code sharing it. */
export function syncAddress(sync: $as.Mutex | $as.Throttle | $as.Limiter): bigint;

/** Keep the process alive while C code on another thread is to complete a step. */
export function keepAlive(): void;
/** Undo one keepAlive(); throws when none is held. */
export function release(): void;

/**
 * true: a Throttle or Limiter made while AsyncToolTest is installed counts its
 * periods in AsyncToolTest's virtual time (run(), nextEvent() move them on).
 * false (the default): periods run on real timers, as in futoin-asyncsteps.
 */
export function virtualPeriods(on: boolean): void;
