'use strict';

/**
 * @file The core's sync objects behind Mutex, Throttle and Limiter.
 */

const N = require('./binding');
const reg = require('./registry');
const ISync = require('../ISync');
const { checkFunc, checkOnError, numArg } = require('./common');

const OP_SYNC = reg.OP_SYNC;

/* the C FutoInSync `s` of the core behind `obj` (in its constructor) */
const nativeInit = (obj, s) => {
    obj._s = s;
    obj._sid = reg.SH[3]; // SH_RET: its id for queued syncs (0: none)
    reg.THROTTLES[obj._sid] = false; // a Throttle says otherwise
};

/* a Throttle or a Limiter: C may hand its periods to JS (AsyncSteps.js onCall()) */
const periodicInit = (obj) => {
    if (obj._sid !== 0) {
        reg.PERIODIC[obj._sid] = new WeakRef(obj);
    }
};

/* the methods of Mutex, Throttle and Limiter, each their own as in
 * futoin-asyncsteps (whose classes extend ISync directly) */
const nativeMethods = {
    sync(as, step, onerror) {
        checkFunc(as, step);
        onerror = checkOnError(as, onerror);
        if (as === null || typeof as !== 'object' || !('_h' in as)) {
            throw new TypeError('sync() needs an AsyncSteps of futoin-polyglot');
        }
        if (typeof as._call === 'function' && as._root === undefined) {
            // a root before execute(): applied on its C root then
            as._call((t) => this._add(t, t._materialize(), step, onerror), (t) => t.sync(this, step, onerror));
            return;
        }
        reg.stepAdds(as);
        this._add(as._root, as._h, step, onerror, false);
    },

    /* queued: h is the step whose callback runs, the op can wait in the
     * shared queue like add() (k is even: k | 1 says there is an onerror) */
    _add(root, h, step, onerror, queued) {
        const k = reg.allocK();
        reg.FNS[k] = step;
        reg.FNS[k + 1] = onerror;
        const eh = !!onerror;
        if (queued && this._sid !== 0) {
            reg.queue(h, OP_SYNC, this._sid, eh ? k + 1 : k);
        } else {
            N.sync(h, this._s, k, eh);
        }
        // the flow keeps this object (and its C lock) alive
        if (root._syncLast !== this) {
            root._syncLast = this;
            (root._syncs || (root._syncs = new Set())).add(this);
        }
    },
};
const nativeSync = nativeMethods.sync;

/* Class (extends ISync) gets the methods */
const nativeClass = (Class) => {
    for (const name of Object.keys(nativeMethods)) {
        Object.defineProperty(Class.prototype, name,
            { value: nativeMethods[name], writable: true, enumerable: false, configurable: true });
    }
};

/* futoin-asyncsteps' _queue holds the waiting steps; here a snapshot of as
 * many placeholders (their count is what callers read) */
const waiting = (n) => Object.freeze(new Array(n).fill(null));

/* the live fields of futoin-asyncsteps' Mutex and Throttle, read from the C
 * object this._s (getters on a prototype: instances keep their shape);
 * N.syncStats() is [inside, mutex waiting, entries this period, throttle waiting] */
const mutexFields = (proto) => {
    Object.defineProperties(proto, {
        _locked: { get() { return N.syncStats(this._s)[0]; }, configurable: true },
        _queue: { get() { return waiting(N.syncStats(this._s)[1]); }, configurable: true },
    });
};
const throttleFields = (proto) => {
    Object.defineProperties(proto, {
        _current: { get() { return N.syncStats(this._s)[2]; }, configurable: true },
        _queue: { get() { return waiting(N.syncStats(this._s)[3]); }, configurable: true },
    });
};

/* futoin-asyncsteps runs every period on a real timer, also under
 * AsyncToolTest; native.virtualPeriods(true) puts those of objects made
 * while it is installed in its virtual time (deterministic runs) */
let virtual = false;
const virtualPeriods = (on) => {
    if (typeof on !== 'boolean') {
        throw new TypeError('virtualPeriods() expects a boolean');
    }
    virtual = on;
};

/* whether new objects use the AsyncToolTest scheduler */
const onTestTool = () => {
    if (!virtual) {
        return false;
    }
    const main = require('./main');
    return main.ActiveAsyncTool === main.AsyncToolTest;
};

const queueLimit = (max_queue) => {
    if (max_queue === null || max_queue === undefined) {
        return null;
    }
    max_queue = numArg(max_queue);
    if (typeof max_queue !== 'number' || !(max_queue >= 0)) {
        throw new TypeError('max_queue must be a non-negative number or null');
    }
    return Math.ceil(max_queue); // a queue of 1.5 takes 2 there (`length >= max_queue` rejects)
};

const positive = (v, what) => {
    v = numArg(v);
    if (typeof v !== 'number' || !(v >= 0)) {
        throw new TypeError(`${what} must be a non-negative number`);
    }
    return v;
};

/* a number of flows or entries: compared as `count < max` there, so 1.5 lets 2 in */
const count = (v, what) => Math.ceil(positive(v, what));

module.exports = {
    ISync, nativeInit, periodicInit, nativeClass, nativeSync, N, onTestTool, virtualPeriods, queueLimit, positive, count, mutexFields,
    throttleFields,
};
