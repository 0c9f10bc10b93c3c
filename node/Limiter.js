'use strict';

/**
 * @file Limiter: a Mutex (concurrent, max_queue) and a Throttle (rate per
 * period_ms, burst queue) in one object, as futoin-asyncsteps' Limiter.
 */

const { NativeSync, N, onTestTool } = require('./lib/syncobj');

const opt = (options, name, dflt) => {
    const v = options[name];
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
        super(N.limiterNew(onTestTool(), opt(options, 'concurrent', 1), opt(options, 'max_queue', 0),
            opt(options, 'rate', 1), opt(options, 'period_ms', 1000), opt(options, 'burst', 0)));
    }
}

module.exports = Limiter;
