'use strict';

/**
 * Shared helpers of the test suite.
 *
 * The suite tests the package in this directory's parent. Every test asserts
 * the behaviour of the reference library futoin-asyncsteps 2.5; to check the
 * suite itself against the reference, point FUTOIN_TEST_IMPL at a copy of it:
 *
 *   FUTOIN_TEST_IMPL=/tmp/ref/node_modules/futoin-asyncsteps node --test test/*.test.js
 *
 * Tests of futoin-polyglot's own extensions (futoin-polyglot/native) are only
 * registered when the package under test is futoin-polyglot.
 *
 * (node --test also runs this file: it then checks that the package loads.)
 */

const path = require('path');

const IMPL = process.env.FUTOIN_TEST_IMPL ?
    path.resolve(process.env.FUTOIN_TEST_IMPL) :
    path.join(__dirname, '..');
/* futoin-polyglot itself (not the reference) is under test */
const isPolyglot = require(path.join(IMPL, 'package.json')).name === 'futoin-polyglot';

const $as = require(IMPL);

/** require() a sub-path of the package under test ('/Mutex', '/lib/main'...) */
const sub = (p) => require(IMPL + p);

/** a promise and its resolvers */
const deferred = () => {
    let resolve;
    let reject;
    const promise = new Promise((res, rej) => {
        resolve = res;
        reject = rej;
    });
    return { promise, resolve, reject };
};

/**
 * Run `build(as)` as the first step of a new flow and wait for the flow's
 * end. Resolves with { err, info, state, args }: err is the error code that
 * reached the outer handler (null on success), args what the last step
 * passed on.
 */
const runFlow = (build, root = $as()) => new Promise((resolve) => {
    root.add(
        (as) => {
            build(as);
        },
        (as, err) => {
            resolve({ err, info: as.state.error_info, state: as.state, args: null });
        },
    );
    root.add((as, ...args) => {
        resolve({ err: null, info: undefined, state: as.state, args });
    });
    root.execute();
});

/**
 * Run `body()` (sync or async) with AsyncToolTest installed: flows made
 * meanwhile run only on AsyncToolTest.run()/nextEvent(), so a test can run
 * every pending event and then check that something did NOT happen.
 */
const onTestTool = async (body) => {
    $as.installAsyncToolTest();
    try {
        return await body($as.AsyncToolTest);
    } finally {
        $as.AsyncToolTest.resetEvents();
        $as.installAsyncToolTest(false);
    }
};

/**
 * A flow waiting at its first step; the returned function completes that
 * step from outside, and the flow's next step pushes 'other flow' to
 * `order` (where a flow resumed from outside goes on, among other work).
 */
const otherFlow = (order) => {
    let other;
    $as().add((as) => {
        as.waitExternal();
        other = as;
    }).add((as) => order.push('other flow')).execute();
    return () => other.success();
};

/** the options of tests that could hang on a broken flow */
const T = { timeout: 5000 };

module.exports = { $as, IMPL, isPolyglot, sub, deferred, runFlow, onTestTool, otherFlow, T };

if (require.main === module) {
    const test = require('node:test');
    const assert = require('node:assert');
    test('the package under test loads and makes flows', () => {
        assert.strictEqual(typeof $as, 'function');
        const as = $as();
        assert.strictEqual(as.isAsyncSteps(), true);
        let ran = false;
        as.add((as) => {
            ran = true;
        }).execute();
        assert.strictEqual(ran, true);
    });
}
