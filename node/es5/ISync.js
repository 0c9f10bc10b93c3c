'use strict';

// futoin-asyncsteps' ES5 build of ./ISync: the same module here
module.exports = require('../ISync');
