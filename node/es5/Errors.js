'use strict';

// futoin-asyncsteps' ES5 build of ./Errors: the same module here
module.exports = require('../Errors');
