'use strict';

/**
 * @file Mutex: at most `max` flows inside at once, re-entrant per flow,
 * others wait in a queue of at most `max_queue` (null: unlimited) or get
 * DefenseRejected.
 */

const { NativeSync, N, onTestTool, queueLimit, count, mutexFields } = require('./lib/syncobj');

class Mutex extends NativeSync {
    constructor(max = 1, max_queue = null) {
        super(N.mutexNew(onTestTool(), count(max, 'max'), queueLimit(max_queue)));
        this._max = max;
        this._max_queue = max_queue;
    }
}

mutexFields(Mutex.prototype); // _locked, _queue

module.exports = Mutex;
