'use strict';

/**
 * @file The package entry point: everything futoin-asyncsteps exposes.
 */

exports = module.exports = require('./main');

exports.ISync = require('../ISync');
exports.Mutex = require('../Mutex');
exports.Throttle = require('../Throttle');
exports.Limiter = require('../Limiter');
exports.testcase = require('../testcase');
