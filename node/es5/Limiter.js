'use strict';

// futoin-asyncsteps' ES5 build of ./Limiter: the same module here
module.exports = require('../Limiter');
