// Compile-only check of index.d.ts and native.d.ts (not run by `npm test`):
//
//   npm install --prefix /tmp/tsc typescript
//   /tmp/tsc/node_modules/.bin/tsc --noEmit --strict --target es2020 --module commonjs \
//       node/test/types-check.ts
//
// Every declaration is used once; the @ts-expect-error lines must fail.

import $as = require('..');
import native = require('../native');

// ---- the module: the factory and its 14 properties ----

const root: $as.AsyncSteps = $as();
const ctor: typeof $as.AsyncSteps = $as.AsyncSteps;
const tool: $as.AsyncTool = $as.ActiveAsyncTool;
const realTool: $as.AsyncTool = $as.AsyncTool;
const testTool: $as.AsyncToolTest = $as.AsyncToolTest;
const code: $as.ErrorCode = $as.Errors.InvalidRequest;
const same: typeof $as.Errors = $as.FutoInError;
const prod: boolean = $as.isProduction;
$as.installAsyncToolTest();
$as.installAsyncToolTest(false);
const maybe: unknown = root;
$as.assertAS(maybe);
maybe.isAsyncSteps(); // narrowed by the assertion
const sync: $as.ISync = new $as.ISync();
const mutex: $as.Mutex = new $as.Mutex(2, null);
const throttle: $as.Throttle = new $as.Throttle(10, 100, 5);
const limiterOptions: $as.LimiterOptions = { concurrent: 1, max_queue: 0, rate: 10, period_ms: 1000, burst: null };
const limiter: $as.Limiter = new $as.Limiter(limiterOptions);
const test: (this: any, done: (err?: any) => void) => void = $as.testcase(
    function(as) {
        as.success();
    },
    (as, err) => {
        as.success();
    },
);
void [ctor, tool, realTool, code, same, prod, sync, test];

// ---- callbacks ----

const exec: $as.ExecFunc = (as, a: number, b: string) => {
    as.success(a, b);
};
const onerror: $as.ErrorFunc = (as, err: string) => {
    if (err === $as.Errors.Timeout) {
        as.success();
    }
};
const oncancel: $as.CancelFunc = (as) => {};
const loopBody: $as.LoopFunc = (as) => as.break();
const repeatBody: $as.RepeatFunc = (as, i: number) => {};
const eachBody: $as.ForEachFunc<string, number> = (as, key, value) => {};
const steps: $as.Step[] = [exec, native.cstep('libsteps.so', 'c_double')];

// ---- state ----

const state: $as.State = root.state;
const info: string | undefined = state.error_info;
const exc: unknown = state.last_exception;
const stack: Function[] | undefined = state.async_stack;
state.myVariable = 123;
const again: $as.State = root.state();
void [info, exc, stack, again, steps];

// ---- a root and the step interface ----

const step: $as.ExecFunc = (as: $as.AsyncStepProtector) => {
    const base: $as.AsyncStepsBase = as;
    as.add((as) => as.success(1, 'two'), onerror)
        .add((as, one: number, two: string) => {
            as.setTimeout(100);
            as.setCancel(oncancel);
            as.waitExternal();
            setTimeout(() => as.success(one + two.length), 10);
        })
        .add(exec, null);
    const p: $as.ParallelStep = as.parallel(onerror);
    p.add((as) => {}).add((as) => {}, onerror).add(native.cstep('libsteps.so', 'c_greet'));
    as.sync(mutex, (as) => {}, onerror);
    as.sync(throttle, (as) => {});
    as.sync(limiter, (as) => {});
    as.copyFrom($as().add((as) => {}));
    as.loop(loopBody, 'outer');
    as.repeat(3, repeatBody);
    as.forEach([1, 2, 3], (as, i: number, v: number) => {});
    as.forEach(new Map<string, boolean>([['a', true]]), (as, k: string, v: boolean) => {});
    as.forEach({ a: 1, b: 2 }, eachBody, 'obj');
    as.successStep(1, 2);
    as.await(Promise.resolve(1), onerror);
    as.loop((as) => {
        as.continue('outer');
    });
    const other: $as.AsyncSteps = as.newInstance();
    const yes: boolean = as.isAsyncSteps() && base.isAsyncSteps();
    void [other, yes];
    if (as.state.error_info === undefined) {
        as.error($as.Errors.NotImplemented, 'some info');
    }
};

root.add(step)
    .add(step, onerror)
    .parallel()
    .add(step);
root.sync(mutex, step, onerror)
    .copyFrom(new $as.AsyncSteps({ x: 1 }, $as.AsyncToolTest))
    .loop(loopBody)
    .repeat(2, repeatBody, 'label')
    .forEach(['a'], (as, i, v: string) => {})
    .successStep('done')
    .await(Promise.resolve('x'));
const fresh: $as.AsyncSteps = root.newInstance();
const never: never = (() => root.error('MyError'))();
root.execute().cancel();
const result: Promise<number> = fresh.add((as) => as.success(1)).promise<number>();
void [never, result];

// ---- AsyncTool and AsyncToolTest ----

const handle = tool.callLater(() => {}, 10);
tool.cancelCall(handle);
tool.cancelImmediate(tool.callImmediate(() => {}));
const ev: $as.AsyncToolTestEvent = testTool.callLater(() => {}, 5);
testTool.cancelCall(ev);
testTool.callImmediate(() => {});
const events: $as.AsyncToolTestEvent[] = testTool.getEvents();
const due: number = events.length ? events[events.length - 1]!.t : 0;
if (testTool.hasEvents()) {
    testTool.nextEvent();
}
testTool.run();
testTool.resetEvents();
void due;

// ---- futoin-polyglot/native ----

const address: native.Address = 0n;
const cs: native.CStep = native.cstep('libsteps.so', 'c_double', { onerror: 'c_recover', data: 0n });
const csOptions: native.CStepOptions = { data: 42 };
const manual = new native.CStep(native.symbol('libsteps.so', 'c_greet'), 0n, 0n);
const fnAddr: bigint = cs.fn + cs.onerror + cs.data + manual.fn;
const flow = $as();
const bsi: bigint = native.binary(flow);
const view: native.WrappedSteps = native.wrap(bsi);
view.add((as) => {}).add(cs);
const isAs: $as.AsyncSteps = view;
const isN: boolean = native.isNative(bsi);
const toolPtr: bigint = native.toolAddress() + native.toolAddress(true);
root.add((as) => {
    native.binary(as);
    native.binary(as.parallel());
});
void [address, csOptions, fnAddr, isAs, isN, toolPtr];

// ---- misuse the declarations reject ----

// @ts-expect-error a step must be a function or a CStep
root.add('not a function');
root.add(cs, onerror); // a C step with a JS error handler
// @ts-expect-error an error handler takes (as, err)
root.add(step, (as: $as.AsyncStepProtector, err: number) => {});
// @ts-expect-error success() is on the step interface, not on a root
root.success();
// @ts-expect-error execute() is on a root, not on the step interface
root.add((as) => as.execute());
// @ts-expect-error a Throttle needs its max
new $as.Throttle();
// @ts-expect-error wrap() results come from native.wrap() only
new native.WrappedSteps();
// @ts-expect-error addresses are BigInts or Numbers
native.isNative('0x1234');
