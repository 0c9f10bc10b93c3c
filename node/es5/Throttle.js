'use strict';

// futoin-asyncsteps' ES5 build of ./Throttle: the same module here
module.exports = require('../Throttle');
