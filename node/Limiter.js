'use strict';

/**
 * @file Limiter: a Mutex (concurrent, max_queue) and a Throttle (rate per
 * period_ms, burst queue) in one object, as futoin-asyncsteps' Limiter.
 */

const { ISync, nativeInit, periodicInit, nativeClass, N, onTestTool, mutexFields, throttleFields } = require('./lib/syncobj');
const { numArg, periodMs } = require('./lib/common');

const opt = (options, name, dflt) => {
    // any falsy setting (unset, 0, NaN, '', false) is the default there
    if (!options[name]) {
        return dflt;
    }
    const v = numArg(options[name]);
    if (typeof v !== 'number' || !(v >= 0)) {
        throw new TypeError(`Limiter option ${name} must be a non-negative number`);
    }
    // counts are compared as `n < max` there (1.5 lets 2 in)
    return Math.ceil(v);
};

/* a Limiter's parts as futoin-asyncsteps shows them: settings and live counts */
class LimiterMutex {
    constructor(s, max, max_queue) {
        this._s = s;
        this._max = max;
        this._max_queue = max_queue;
    }
}
mutexFields(LimiterMutex.prototype);

class LimiterThrottle {
    constructor(s, max, period_ms, max_queue) {
        this._s = s;
        this._max = max;
        this._period_ms = period_ms;
        this._max_queue = max_queue;
    }
}
throttleFields(LimiterThrottle.prototype);

class Limiter extends ISync {
    constructor(options = {}) {
        if (options === null || typeof options !== 'object') {
            throw new TypeError('Limiter(options) expects an object');
        }
        const concurrent = opt(options, 'concurrent', 1);
        const max_queue = opt(options, 'max_queue', 0);
        const rate = opt(options, 'rate', 1);
        // any falsy one is 1000 there too; the rest goes to Node's setInterval()
        const period_ms = options.period_ms ? periodMs(options.period_ms, 'Limiter option period_ms') : 1000;
        const burst = opt(options, 'burst', 0);
        const s = N.limiterNew(onTestTool(), concurrent, max_queue, rate, period_ms, burst);
        super();
        nativeInit(this, s);
        periodicInit(this);
        // the settings and the live counts, where futoin-asyncsteps' Limiter
        // keeps them (one C object does the work of its Mutex and Throttle)
        this._mutex = Object.freeze(new LimiterMutex(this._s, concurrent, max_queue));
        this._throttle = Object.freeze(new LimiterThrottle(this._s, rate, period_ms, burst));
    }
}

nativeClass(Limiter);

module.exports = Limiter;
