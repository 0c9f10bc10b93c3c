'use strict';

/**
 * @file Mutex: at most `max` flows inside at once, re-entrant per flow,
 * others wait in a queue of at most `max_queue` (null: unlimited) or get
 * DefenseRejected.
 */

const { ISync, nativeInit, nativeClass, N, onTestTool, queueLimit, count, mutexFields } = require('./lib/syncobj');

class Mutex extends ISync {
    constructor(max = 1, max_queue = null) {
        super();
        nativeInit(this, N.mutexNew(onTestTool(), count(max, 'max'), queueLimit(max_queue)));
        this._max = max;
        this._max_queue = max_queue;
    }
}

nativeClass(Mutex);
mutexFields(Mutex.prototype); // _locked, _queue

module.exports = Mutex;
