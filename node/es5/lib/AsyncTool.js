'use strict';

// futoin-asyncsteps' ES5 build of lib/AsyncTool: the same module here
module.exports = require('../../lib/AsyncTool');
