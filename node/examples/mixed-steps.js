'use strict';

/*
 * C and JS steps in one flow: values go from JS to C and back, an error
 * raised in C is handled in JS, another one by a C error handler, and the
 * way values look on each side.
 *
 * Build the C library first: bash csteps/build.sh (or run-all.sh)
 */

const path = require('path');
const $as = require('..'); // require('futoin-polyglot') when installed
const native = require('../native'); // require('futoin-polyglot/native')

// built by csteps/build.sh from csteps/steps.c
const lib = path.join(__dirname, '..', 'build', 'examples', 'libsteps.so');

// C steps: FTN12 execute callbacks (and optional error callbacks) by symbol
const cGreet = native.cstep(lib, 'c_greet');
const cDouble = native.cstep(lib, 'c_double');
const cDoubleOrMinusOne = native.cstep(lib, 'c_double', { onerror: 'c_recover' });
const cDescribe = native.cstep(lib, 'c_describe');
const cValues = native.cstep(lib, 'c_values');

$as()
    .add((as) => {
        as.success('JS');
    })
    .add(cGreet) // (string) -> (string)
    .add((as, text) => {
        console.log(`JS got: ${text}`);
        as.success(21);
    })
    .add(cDouble) // (number) -> (number)
    .add((as, n) => {
        console.log(`JS got: ${n} (${typeof n})`);
        as.success(-5);
    })
    .add(
        (as, n) => {
            // a C sub-step of a JS step: it fails with "NegativeValue"
            as.add((as) => as.success(n));
            as.add(cDouble);
            as.add((as) => {
                console.log('not reached');
            });
        },
        (as, err) => {
            console.log(`JS handler: caught ${err} (${as.state.error_info})`);
            as.success(0);
        },
    )
    .add((as, n) => {
        console.log(`JS recovered with ${n}`);
        as.success('not a number');
    })
    .add(cDoubleOrMinusOne) // fails in C, recovered by the C error handler
    .add((as, n) => {
        console.log(`JS got from the C handler: ${n}`);
    })
    // JS values as C reads them
    .forEach([7, 0.5, 'text', false, 2n ** 40n, Buffer.from('buf'), { an: 'object' }], (as, i, value) => {
        as.add((as) => as.success(value));
        as.add(cDescribe);
        as.add((as, text) => {
            console.log(`C sees ${typeof value} as ${text}`);
        });
    })
    // C values as JS gets them
    .add(cValues)
    .add((as, big, double, bool, bytes) => {
        console.log(`JS sees ${typeof big} ${big}, ${typeof double} ${double}, ` +
            `${typeof bool} ${bool}, Buffer ${bytes.toString('hex')}`);
    })
    .execute();
