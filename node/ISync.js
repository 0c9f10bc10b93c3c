'use strict';

/**
 * @file Base interface of synchronization objects (FTN12 2.3).
 */

const { NotImplemented } = require('./Errors');

class ISync {
    /**
     * Add step `func` to `as`, run while this object is held.
     * @param {AsyncSteps} as - steps interface
     * @param {Function} _func - step function
     * @param {Function=} _onerror - error handler
     */
    sync(as, _func, _onerror) {
        as.error(NotImplemented, '#sync() API');
    }
}

module.exports = ISync;
