'use strict';

/**
 * @file Limiter: a Mutex (concurrent, max_queue) and a Throttle (rate per
 * period_ms, burst queue) in one object, as futoin-asyncsteps' Limiter.
 */

const { NativeSync, N, onTestTool, mutexFields, throttleFields } = require('./lib/syncobj');
const { numArg } = require('./lib/common');

const opt = (options, name, dflt) => {
    const v = numArg(options[name]);
    if (v === undefined || v === null || v === 0 && dflt !== 0) {
        return dflt;
    }
    if (typeof v !== 'number' || !(v >= 0)) {
        throw new TypeError(`Limiter option ${name} must be a non-negative number`);
    }
    return v;
};

class Limiter extends NativeSync {
    constructor(options = {}) {
        if (options === null || typeof options !== 'object') {
            throw new TypeError('Limiter(options) expects an object');
        }
        const concurrent = opt(options, 'concurrent', 1);
        const max_queue = opt(options, 'max_queue', 0);
        const rate = opt(options, 'rate', 1);
        const period_ms = opt(options, 'period_ms', 1000);
        const burst = opt(options, 'burst', 0);
        super(N.limiterNew(onTestTool(), concurrent, max_queue, rate, period_ms, burst));
        // the settings and the live counts, where futoin-asyncsteps' Limiter
        // keeps them (one C object does the work of its Mutex and Throttle)
        this._mutex = Object.freeze(mutexFields({ _max: concurrent, _max_queue: max_queue }, this._s));
        this._throttle = Object.freeze(throttleFields({ _max: rate, _period_ms: period_ms, _max_queue: burst }, this._s));
    }
}

module.exports = Limiter;
