'use strict';

// futoin-asyncsteps' ES5 build of ./AsyncSteps: the same module here
module.exports = require('../AsyncSteps');
