'use strict';

/**
 * @file Loads the Node-API addon (built by scripts/build.js at install).
 */

const path = require('path');

// FUTOIN_POLYGLOT_ADDON: another build of the addon (a sanitizer build)
const file = process.env.FUTOIN_POLYGLOT_ADDON || path.join(__dirname, '..', 'build', 'futoin_polyglot.node');

let binding;
try {
    // not require(): each JS instance of the package (loaded again after
    // require.cache was cleared, maybe only in part) gets an addon instance
    // of its own, whose init() it calls once
    const m = { exports: {} };
    process.dlopen(m, file);
    binding = m.exports;
} catch (e) {
    e.message = e.code === 'ERR_DLOPEN_DISABLED' ?
        `futoin-polyglot: its engine is a native addon, and native addons are disabled in this process ` +
            `(node --no-addons, the permission model without --allow-addons, or a worker started so): ${e.message}` :
        `futoin-polyglot: the native addon is not built (run "npm run build" in ${
            path.join(__dirname, '..')}): ${e.message}`;
    throw e;
}

// the addon's exports object is in dictionary mode (44 properties set one by
// one): every N.fn() would be a dictionary lookup; a copy has fast properties
module.exports = { ...binding };
