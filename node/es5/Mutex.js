'use strict';

// futoin-asyncsteps' ES5 build of ./Mutex: the same module here
module.exports = require('../Mutex');
