'use strict';

/**
 * @file Entry point without the sync primitives (futoin-asyncsteps/lib/main).
 */

const AsyncTool = require('./AsyncTool');
const AsyncToolTest = require('./AsyncToolTest');
const Errors = require('../Errors');
const AsyncSteps = require('./AsyncSteps');
const { isProduction } = require('./common');

/**
 * A new root AsyncSteps on the active event tool.
 * @returns {AsyncSteps} root
 */
exports = module.exports = function() {
    return new AsyncSteps(null, exports.ActiveAsyncTool);
};

exports.ActiveAsyncTool = AsyncTool;
exports.AsyncTool = AsyncTool;
exports.AsyncToolTest = AsyncToolTest;
exports.FutoInError = Errors;
exports.Errors = Errors;
exports.AsyncSteps = AsyncSteps;
exports.isProduction = isProduction;

exports.installAsyncToolTest = function(install) {
    exports.ActiveAsyncTool = install === false ? AsyncTool : AsyncToolTest;
};

exports.assertAS = function(as) {
    try {
        if (as.isAsyncSteps()) {
            return;
        }
    } catch (e) {
        // falls through
    }
    throw new Error(`Not an instance of AsyncSteps: ${as}`);
};
