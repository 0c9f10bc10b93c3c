'use strict';

/**
 * @file futoin-polyglot/native: the FTN12 binary interface from JS.
 *
 *   const native = require('futoin-polyglot/native');
 *   const step = native.cstep('./libsteps.so', 'my_step', { onerror: 'my_onerror' });
 *   $as().add(step).add((as, v) => console.log(v)).execute();
 */

const N = require('./lib/binding');
const AsyncSteps = require('./lib/AsyncSteps');
const AsyncToolTest = require('./lib/AsyncToolTest');
const reg = require('./lib/registry');
const { virtualPeriods } = require('./lib/syncobj');

/**
 * A C step: an FTN12 execute callback (and optional error callback) from a
 * shared library, added with as.add(cstep) like a JS function.
 */
class CStep {
    constructor(fn, onerror, data) {
        this.fn = fn;
        this.onerror = onerror;
        this.data = data;
    }
}

const address = (v, what) => {
    if (typeof v === 'bigint') {
        return v;
    }
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) {
        return BigInt(v);
    }
    throw new TypeError(`${what} must be an address (BigInt)`);
};

/**
 * The address of a C function in a shared library (loaded once, kept).
 * @param {string} library - path of the shared library
 * @param {string} name - symbol
 * @returns {bigint} address
 */
const symbol = (library, name) => {
    if (typeof library !== 'string' || typeof name !== 'string') {
        throw new TypeError('symbol(library, name) expects two strings');
    }
    return N.symbol(library, name);
};

/**
 * A C step from a shared library.
 * @param {string} library - path of the shared library
 * @param {string} name - symbol of the FutoInAsyncSteps_execute_callback
 * @param {object} [options] - {onerror: symbol of the error callback, data: BigInt passed as `data`}
 * @returns {CStep} step for as.add()
 */
const cstep = (library, name, options = {}) => {
    const fn = symbol(library, name);
    const onerror = options.onerror ? symbol(library, options.onerror) : 0n;
    const data = options.data === undefined ? 0n : address(options.data, 'data');
    return new CStep(fn, onerror, data);
};

/**
 * The FutoInAsyncSteps* of a JS AsyncSteps, step interface or parallel object.
 * @param {AsyncSteps} as - a futoin-polyglot AsyncSteps
 * @returns {bigint} address, valid while `as` is
 */
const binary = (as) => {
    if (as === null || typeof as !== 'object' || !('_h' in as)) {
        throw new TypeError('binary() expects a futoin-polyglot AsyncSteps');
    }
    const a = N.binary(typeof as._binary === 'function' ? as._binary() : as._h);
    if (as instanceof AsyncSteps && !as._foreign && EXPORTED.get(a)?.deref() !== as) {
        EXPORTED.set(a, new WeakRef(as));
        unexport.register(as, a);
    }
    return a;
};

/* the JS roots binary() gave out, by address: wrap() of one is that root
 * (a second view of it would run its steps without it) */
const EXPORTED = new Map();
const unexport = new FinalizationRegistry((a) => {
    if (EXPORTED.get(a)?.deref() === undefined) {
        EXPORTED.delete(a);
    }
});

/* the live JS root at address a, if binary() gave it out */
const exportedRoot = (a) => {
    const root = EXPORTED.get(a)?.deref();
    if (root === undefined) {
        return undefined;
    }
    try {
        return N.binary(root._h) === a ? root : undefined;
    } catch (e) {
        return undefined; // its C root is gone
    }
};

/**
 * A JS AsyncSteps over any provider's FutoInAsyncSteps* (a root, or a step
 * inside its callback). JS steps added to it run inside that flow.
 */
class WrappedSteps extends AsyncSteps {
}

const wrap = (addr) => {
    const a = address(addr, 'wrap()');
    if (!mayBeObject(a)) {
        throw new TypeError(`wrap(): 0x${a.toString(16)} is no FutoInAsyncSteps address`);
    }
    const root = exportedRoot(a);
    if (root !== undefined) {
        return root;
    }
    const w = new WrappedSteps();
    w._h = N.wrap(w, a);
    w._foreign = true; // every call goes to the wrapped flow at once
    if (reg.SH[3] === 1) {
        // a flow of the AsyncToolTest scheduler: newInstance() stays on it
        w._test = true;
        w._async_tool = AsyncToolTest;
    }
    return w;
};

/* whether `a` may be the address of an object at all, without reading it:
 * the first 64 KiB are never mapped, objects are pointer-aligned, user
 * space ends at 2^47 on x86-64 (arm64 maps heaps higher) */
const USER_END = process.arch === 'x64' ? 0x800000000000n : 1n << 64n;
const mayBeObject = (a) => a >= 0x10000n && a < USER_END && (a & 7n) === 0n;

const isNative = (addr) => {
    const a = address(addr, 'isNative()');
    return mayBeObject(a) && N.isNative(a);
};

/**
 * The FutoInAsyncTool* driving JS flows (for C code of the same core build).
 * @param {boolean} [test=false] - the AsyncToolTest one
 * @returns {bigint} address
 */
const toolAddress = (test = false) => N.toolAddress(!!test);

/**
 * An FTN12 sync object (FutoInSync*) for flows driven from C, made of a JS
 * object with lock(as) and unlock(as): lock() returning means acquired;
 * as.waitExternal() there and a later as.success() means acquired after
 * waiting; as.error() rejects. unlock(as) runs when the protected step ends.
 * The object stays alive for the life of the process (C may keep the pointer).
 * @param {{lock: Function, unlock: Function}} obj - the JS sync object
 * @returns {bigint} FutoInSync*
 */
const syncAdapter = (obj) => {
    if (obj === null || typeof obj !== 'object' || typeof obj.lock !== 'function' ||
        typeof obj.unlock !== 'function') {
        throw new TypeError('syncAdapter() expects an object with lock(as) and unlock(as)');
    }
    const view = new AsyncSteps(); // gives the callbacks a state
    view._foreign = true;
    const kl = reg.allocK();
    reg.FNS[kl] = (as) => obj.lock(as);
    const ku = reg.allocK();
    reg.FNS[ku] = (as) => obj.unlock(as);
    return N.syncAdapter(view, kl, ku);
};

/**
 * The FutoInSync* of a futoin-polyglot Mutex, Throttle or Limiter, for C
 * code (addSync) sharing it with JS flows.
 * @param {object} sync - Mutex, Throttle or Limiter
 * @returns {bigint} FutoInSync*, valid while `sync` is reachable
 */
const syncAddress = (sync) => {
    if (sync === null || typeof sync !== 'object' || sync._s === undefined) {
        throw new TypeError('syncAddress() expects a futoin-polyglot Mutex, Throttle or Limiter');
    }
    return N.syncAddress(sync._s);
};

/**
 * Keep the process alive while C code on another thread is to complete a
 * step (a waitExternal() step alone does not keep Node running); call
 * release() once for every keepAlive().
 */
const keepAlive = () => N.hold(1);
const release = () => N.hold(-1);

/**
 * virtualPeriods(true): a Throttle or Limiter made while AsyncToolTest is
 * installed counts its periods in AsyncToolTest's virtual time, so run()
 * and nextEvent() move them on (for deterministic tests). Off by default:
 * their periods run on real timers, as futoin-asyncsteps' do.
 */

module.exports = {
    CStep, cstep, symbol, binary, wrap, isNative, toolAddress, WrappedSteps, syncAdapter, syncAddress,
    keepAlive, release, virtualPeriods,
};
