'use strict';

/**
 * @file testcase(func, onerror): a mocha-style test function running `func`
 * as a step; with `onerror` the test must fail into it (negative test).
 */

const AsyncSteps = require('./AsyncSteps');

module.exports = function(func, onerror) {
    return function(done) {
        const as = new AsyncSteps();
        as.add(
            (as) => {
                as.add(
                    (as) => {
                        func.call(this, as);
                        if (onerror) {
                            as.add((as) => {
                                as.error('NegativeTestMustThrow');
                            });
                        }
                    },
                    onerror,
                );
            },
            (as, err) => {
                console.log(`ERROR: ${err} (${as.state.error_info})`);
                done(as.state.last_exception || new Error('Generic Fail'));
            },
        );
        as.add((as) => done());
        as.execute();
    };
};
