'use strict';

// futoin-asyncsteps' ES5 build of ./testcase: the same module here
module.exports = require('../testcase');
