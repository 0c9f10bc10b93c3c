'use strict';

/**
 * @file The class of the interface a step gets (futoin-asyncsteps/lib/AsyncStepProtector).
 */

module.exports = require('./AsyncSteps').AsyncStepProtector;
