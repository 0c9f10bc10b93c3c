import $as = require('./index');
export = $as.testcase;
