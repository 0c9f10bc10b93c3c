// Code written against futoin-asyncsteps' API, type-checked with
// `tsc --strict` against futoin-polyglot's declarations (scripts/test.sh).
import $as = require('futoin-polyglot');
import Mutex = require('futoin-polyglot/Mutex');
import Throttle = require('futoin-polyglot/Throttle');
import Limiter = require('futoin-polyglot/Limiter');
import ISync = require('futoin-polyglot/ISync');
import Errors = require('futoin-polyglot/Errors');
import AsyncSteps = require('futoin-polyglot/AsyncSteps');
import testcase = require('futoin-polyglot/testcase');
import main = require('futoin-polyglot/lib/main');
import AsyncTool = require('futoin-polyglot/lib/AsyncTool');
import AsyncToolTest = require('futoin-polyglot/lib/AsyncToolTest');
import native = require('futoin-polyglot/native');

const root = $as();
root.add((as) => {
    as.setTimeout(10);
    as.setCancel((as) => {});
}).add(
    (as, arg: string) => {
        as.success(arg.length);
    },
    (as, err: string) => {
        const info: unknown = as.state.error_info;
        void info;
        if (err === Errors.Timeout) {
            as.success(0);
        }
    },
);
root.add((as) => as.error(Errors.InvalidRequest, { field: 'x' })); // any error_info
const L = Symbol('outer');
root.loop((as) => {
    as.repeat(3, (as, i: number) => {
        if (i === 1) {
            as.continue(L); // labels compare by identity: any value
        }
        as.break('outer');
    });
}, L).forEach([1, 2], (as, i: number, v: number) => {})
    .forEach({ a: 1 }, (as, k: string, v: number) => {})
    .successStep(1, 2)
    .await(Promise.resolve(1));
root.state.myvar = 1;
const p = root.parallel((as, err) => {});
p.add((as) => {}).add((as) => {});

class MySync extends ISync {
    sync(as: $as.AsyncStepProtector, step: $as.ExecFunc, onerror?: $as.ErrorFunc): void {
        as.add((as) => {
            as.add(step, onerror);
        });
    }
}
root.sync(new MySync(), (as) => {}).sync(new Mutex(2, 10), (as) => {})
    .sync(new Throttle(10, 100), (as) => {}).sync(new Limiter({ concurrent: 2, rate: 10 }), (as) => {});
const n: Promise<number> = new AsyncSteps().add((as) => as.success(1)).promise<number>();
void n;
root.execute();
main.installAsyncToolTest();
const ev = AsyncToolTest.callLater(() => {}, 5);
AsyncToolTest.cancelCall(ev);
AsyncToolTest.run();
main.installAsyncToolTest(false);
const h = AsyncTool.callLater(() => {}, 1);
AsyncTool.cancelCall(h);
const ok: boolean = main.isProduction;
void ok;
const t = testcase((as) => as.success());
void t;
void native;
