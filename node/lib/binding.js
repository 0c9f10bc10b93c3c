'use strict';

/**
 * @file Loads the Node-API addon (built by scripts/build.js at install).
 */

const path = require('path');

let binding;
try {
    binding = require(path.join(__dirname, '..', 'build', 'futoin_polyglot.node'));
} catch (e) {
    e.message = `futoin-polyglot: the native addon is not built (run "npm run build" in ${
        path.join(__dirname, '..')}): ${e.message}`;
    throw e;
}

module.exports = binding;
