'use strict';

// futoin-asyncsteps' ES5 build of lib/ParallelStep: the same module here
module.exports = require('../../lib/ParallelStep');
