'use strict';

/* The quickstart of README.md, runnable from the repository. */

const $as = require('..'); // require('futoin-polyglot') when installed

$as()
    .add((as) => {
        as.success('world');
    })
    .add(
        (as, name) => {
            console.log(`hello, ${name}`);
            as.add((as) => as.error('MyError', 'something went wrong'));
        },
        (as, err) => {
            console.log(`handled ${err}: ${as.state.error_info}`);
            as.success(42);
        },
    )
    .add((as, value) => {
        const p = as.parallel();
        p.add((as) => {
            as.state.a = value + 1;
        });
        p.add((as) => {
            as.state.b = value + 2;
        });
    })
    .add((as) => {
        console.log(`parallel: ${as.state.a} ${as.state.b}`);
    })
    .execute();
