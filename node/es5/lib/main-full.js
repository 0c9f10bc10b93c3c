'use strict';

// futoin-asyncsteps' ES5 build of lib/main-full: the same module here
module.exports = require('../../lib/main-full');
