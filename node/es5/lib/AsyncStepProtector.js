'use strict';

// futoin-asyncsteps' ES5 build of lib/AsyncStepProtector: the same module here
module.exports = require('../../lib/AsyncStepProtector');
