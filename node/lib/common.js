'use strict';

/**
 * @file Shared pieces of the JS API: production mode and argument checks,
 * with the messages of futoin-asyncsteps.
 */

const isProduction = process.env.NODE_ENV === 'production';

// the last two step functions and error handlers that passed: reading a
// function's length is a call into V8's runtime, and flows add the same
// functions again and again (often two in turn)
let lastFunc = {}; // not functions: nothing matches before the first check
let prevFunc = lastFunc;
let lastEh = lastFunc;
let prevEh = lastFunc;

const checkFunc = (asi, func) => {
    if (func === lastFunc || func === prevFunc) {
        return;
    }
    if (typeof func !== 'function') {
        throw new TypeError(`step function expected, got ${typeof func}`);
    }
    if (!isProduction && func.length < 1) {
        asi.error('InternalError', 'Step function must expect at least AsyncStep interface');
    }
    prevFunc = lastFunc;
    lastFunc = func;
};

/* the error handler to use: undefined for any falsy value (none, as in
 * futoin-asyncsteps: `as.add(step, cond && handler)`), else a function */
const checkOnError = (asi, onerror) => {
    if (onerror === lastEh || onerror === prevEh) {
        return onerror;
    }
    if (!onerror) {
        return undefined;
    }
    if (typeof onerror !== 'function') {
        throw new TypeError(`error handler must be a function, got ${typeof onerror}`);
    }
    if (!isProduction && onerror.length !== 2) {
        asi.error('InternalError', 'Error handler must take exactly two arguments');
    }
    prevEh = lastEh;
    lastEh = onerror;
    return onerror;
};

const noop = () => {};

/* a numeric string as the number it spells (futoin-asyncsteps compares or
 * passes on what it is given, so '2' works there); anything else as it is */
const numArg = (v) => (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v)) ? Number(v) : v);

/* milliseconds for Node's timers, as futoin-asyncsteps passes them on:
 * past a 32-bit signed int they take 1 ms, with this warning */
const timerMs = (ms) => {
    if (ms > 0x7fffffff) {
        process.emitWarning(`${ms} does not fit into a 32-bit signed integer.\nTimeout duration was set to 1.`,
            'TimeoutOverflowWarning');
        return 1;
    }
    return ms;
};

/* a period as futoin-asyncsteps hands it to Node's setInterval(): coerced
 * to a number there (a Symbol or a BigInt throws TypeError, here at once);
 * no number, or below 1 ms, is 1 ms */
const periodMs = (v, what) => {
    let ms;
    try {
        ms = v * 1;
    } catch (e) {
        throw new TypeError(`${what} must be a number, got ${typeof v}`);
    }
    return ms >= 1 ? timerMs(ms) : 1;
};

module.exports = { isProduction, checkFunc, checkOnError, noop, numArg, timerMs, periodMs };
