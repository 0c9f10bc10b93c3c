'use strict';

/**
 * @file The class of what parallel() returns (futoin-asyncsteps/lib/ParallelStep).
 */

module.exports = require('./AsyncSteps').ParallelStep;
