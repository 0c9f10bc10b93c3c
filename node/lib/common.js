'use strict';

/**
 * @file Shared pieces of the JS API: production mode and argument checks,
 * with the messages of futoin-asyncsteps.
 */

const isProduction = process.env.NODE_ENV === 'production';

// the last step function that passed: reading a function's length is a
// call into V8's runtime, and flows add the same function again and again
let lastFunc = {}; // not a function: nothing matches before the first check

const checkFunc = (asi, func) => {
    if (func === lastFunc) {
        return;
    }
    if (typeof func !== 'function') {
        throw new TypeError(`step function expected, got ${typeof func}`);
    }
    if (!isProduction && func.length < 1) {
        asi.error('InternalError', 'Step function must expect at least AsyncStep interface');
    }
    lastFunc = func;
};

const checkOnError = (asi, onerror) => {
    if (onerror === undefined || onerror === null) {
        return;
    }
    if (typeof onerror !== 'function') {
        throw new TypeError(`error handler must be a function, got ${typeof onerror}`);
    }
    if (!isProduction && onerror.length !== 2) {
        asi.error('InternalError', 'Error handler must take exactly two arguments');
    }
};

const checkLabel = (label) => {
    if (label !== undefined && label !== null && typeof label !== 'string') {
        throw new TypeError(`loop label must be a string, got ${typeof label}`);
    }
};

const noop = () => {};

module.exports = { isProduction, checkFunc, checkOnError, checkLabel, noop };
