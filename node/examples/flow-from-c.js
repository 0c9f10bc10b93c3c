'use strict';

/*
 * A flow built by C code: JS hands the FutoInAsyncSteps* of a new root to a
 * C function, which adds C steps through the FTN12 vtable; JS then adds its
 * own steps to the same C root through native.wrap(address) and executes it.
 *
 * Build the C library first: bash csteps/build.sh (or run-all.sh)
 */

const path = require('path');
const $as = require('..'); // require('futoin-polyglot') when installed
const native = require('../native'); // require('futoin-polyglot/native')

// built by csteps/build.sh from csteps/steps.c
const lib = path.join(__dirname, '..', 'build', 'examples', 'libsteps.so');

const flow = $as();
const address = native.binary(flow); // FutoInAsyncSteps* of the root (a BigInt)
console.log(`flow is native: ${native.isNative(address)}`);

// native/ has no general FFI: the C builder runs as a C step of a helper
// flow, with the target root passed as the step's `data` pointer.
const builder = native.cstep(lib, 'build_order_flow', { data: address });

$as()
    .add(builder)
    .add((as) => {
        console.log('C has built the flow');

        // JS steps, added to the same C root behind `address`
        const view = native.wrap(address);
        view.add((as, total, currency) => {
            console.log(`JS: total ${total} ${currency}`);
            as.success(total);
        });
        view.add((as, total) => {
            console.log(`JS: ${total > 400 ? 'large' : 'small'} order`);
        });

        // run the built flow as a step of this one
        as.await(flow.promise());
    })
    .add((as) => {
        console.log('flow done');
    })
    .execute();
