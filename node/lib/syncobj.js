'use strict';

/**
 * @file The core's sync objects behind Mutex, Throttle and Limiter.
 */

const N = require('./binding');
const ISync = require('../ISync');
const { checkFunc, checkOnError } = require('./common');

class NativeSync extends ISync {
    /* `s` is the external FutoInSync of the core */
    constructor(s) {
        super();
        this._s = s;
    }

    sync(as, step, onerror) {
        checkFunc(as, step);
        checkOnError(as, onerror);
        const root = as._root || as;
        const h = as._h;
        if (!root || !root._fns || h === undefined) {
            throw new TypeError('sync() needs an AsyncSteps of futoin-polyglot');
        }
        const k = N.sync(h, this._s, onerror !== undefined && onerror !== null);
        root._fns[k] = step;
        root._fns[k + 1] = onerror;
        // the flow keeps this object (and its C lock) alive
        (root._syncs || (root._syncs = new Set())).add(this);
        if (root._model && root === as) {
            root._model.push((t) => t.sync(this, step, onerror));
        }
    }
}

/* whether new objects use the AsyncToolTest scheduler */
const onTestTool = () => {
    const main = require('./main');
    return main.ActiveAsyncTool === main.AsyncToolTest;
};

const queueLimit = (max_queue) => {
    if (max_queue === null || max_queue === undefined) {
        return null;
    }
    if (typeof max_queue !== 'number' || !(max_queue >= 0)) {
        throw new TypeError('max_queue must be a non-negative number or null');
    }
    return max_queue;
};

const positive = (v, what) => {
    if (typeof v !== 'number' || !(v >= 0)) {
        throw new TypeError(`${what} must be a non-negative number`);
    }
    return v;
};

module.exports = { NativeSync, N, onTestTool, queueLimit, positive };
