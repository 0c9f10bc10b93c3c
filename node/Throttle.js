'use strict';

/**
 * @file Throttle: at most `max` entries per `period_ms`, others wait in a
 * queue of at most `max_queue` (null: unlimited) or get DefenseRejected.
 */

const { ISync, nativeInit, periodicInit, nativeClass, N, onTestTool, queueLimit, count, throttleFields } = require('./lib/syncobj');
const { periodMs } = require('./lib/common');
const reg = require('./lib/registry');

class Throttle extends ISync {
    constructor(max, period_ms = 1e3, max_queue = null) {
        if (max === undefined) {
            throw new TypeError('Throttle(max, period_ms, max_queue): max is required');
        }
        const s = N.throttleNew(onTestTool(), count(max, 'max'), periodMs(period_ms, 'period_ms'), queueLimit(max_queue));
        super();
        nativeInit(this, s);
        periodicInit(this);
        if (this._sid !== 0) {
            reg.THROTTLES[this._sid] = true; // nothing to unlock: mergeInner may enter it at once
        }
        this._max = max;
        this._period_ms = period_ms;
        this._max_queue = max_queue;
    }

    /* as futoin-asyncsteps' Throttle: null while no period counts entries */
    get _timer() {
        return N.syncTimer(this._s) ? PERIOD_TIMER : null;
    }
}

nativeClass(Throttle);
throttleFields(Throttle.prototype); // _current, _queue

const PERIOD_TIMER = Object.freeze({ period: true });

module.exports = Throttle;
