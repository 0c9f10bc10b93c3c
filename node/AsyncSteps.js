'use strict';

module.exports = require('./lib/AsyncSteps');
