import $as = require('./index');
export = $as.Limiter;
