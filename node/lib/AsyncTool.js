'use strict';

/**
 * @file The default event tool: Node timers, as in futoin-asyncsteps. Flows
 * themselves are scheduled by the C core on Node's libuv loop; these
 * functions serve code that schedules its own events the same way.
 */

exports = module.exports = {};

exports.callLater = (func, timeout_ms) => setTimeout(func, timeout_ms);
exports.cancelCall = (handle) => {
    clearTimeout(handle);
};
exports.callImmediate = (func) => setImmediate(func);
exports.cancelImmediate = (handle) => {
    clearImmediate(handle);
};
