import $as = require('./index');
export = $as.Throttle;
