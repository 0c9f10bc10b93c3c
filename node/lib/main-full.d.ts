import $as = require('../index');
export = $as;
