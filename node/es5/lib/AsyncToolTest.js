'use strict';

// futoin-asyncsteps' ES5 build of lib/AsyncToolTest: the same module here
module.exports = require('../../lib/AsyncToolTest');
