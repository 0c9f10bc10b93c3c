'use strict';

// The addon keeps all its state per Node environment: flows run in
// worker_threads beside the main thread's, and a worker that ends with
// flows still pending (waiting, or with steps queued) tears down cleanly.

const test = require('node:test');
const assert = require('node:assert');
const { Worker } = require('worker_threads');
const { $as, IMPL, T } = require('./helpers');

const PKG = IMPL;

/* the worker: `n` flows of steps, timers and a Mutex; then, when asked,
 * flows left pending on purpose before it exits */
const WORKER = `
const { parentPort, workerData } = require('worker_threads');
const $as = require(workerData.pkg);
const mutex = new $as.Mutex();
const flow = (i) => new Promise((resolve, reject) => {
    const as = $as();
    as.add((as) => {
        as.state.v = i;
        as.sync(mutex, (as) => {
            as.add((as) => {
                as.waitExternal();
                setTimeout(() => as.state && as.success(as.state.v * 2), 1);
            });
        });
    });
    as.add((as, v) => {
        as.repeat(3, (as, n) => {
            as.state.v += n;
        });
        as.add((as) => resolve([v, as.state.v]));
    }, (as, err) => reject(new Error(err)));
    as.execute();
});
(async () => {
    const out = [];
    for (let i = 0; i < workerData.n; ++i) {
        out.push(await flow(i));
    }
    if (workerData.leavePending) {
        const hold = $as();
        hold.add((as) => as.waitExternal());
        hold.execute();
        const queued = $as();
        queued.add((as) => as.setTimeout(60000)).add((as) => {});
        queued.execute();
    }
    parentPort.postMessage(out);
})();
`;

const runWorker = (n, leavePending) => new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { eval: true, workerData: { pkg: PKG, n, leavePending } });
    let result = null;
    w.on('message', (m) => {
        result = m;
        if (leavePending) {
            w.terminate(); // while its flows wait
        }
    });
    w.on('error', reject);
    w.on('exit', () => resolve(result));
});

const expected = (n) => Array.from({ length: n }, (_, i) => [i * 2, i + 3]);

test('flows run in worker threads and in the main thread at the same time', T, async () => {
    const main = new Promise((resolve) => {
        const as = $as();
        as.add((as) => {
            as.repeat(50, (as, n) => {
                as.add((as) => {
                    as.waitExternal();
                    setImmediate(() => as.success());
                });
            });
        });
        as.add((as) => resolve('main done'));
        as.execute();
    });
    const [a, b, m] = await Promise.all([runWorker(20, false), runWorker(30, false), main]);
    assert.deepStrictEqual(a, expected(20));
    assert.deepStrictEqual(b, expected(30));
    assert.strictEqual(m, 'main done');
});

test('a worker terminated with flows pending tears down without harm to the others', T, async () => {
    const results = await Promise.all([runWorker(5, true), runWorker(5, true), runWorker(10, false)]);
    assert.deepStrictEqual(results, [expected(5), expected(5), expected(10)]);
    // the main thread's flows still run
    const r = await new Promise((resolve) => {
        $as().add((as) => as.success(7)).add((as, v) => resolve(v)).execute();
    });
    assert.strictEqual(r, 7);
});

test('a process that loads the package only in workers exits cleanly', T, () => {
    // Node unloaded the addon when the only worker using it ended, before
    // its loop ran the close callbacks of the addon's handles: a crash
    const script = `
        const { Worker } = require('worker_threads');
        const code = "const $as = require(" + JSON.stringify(${JSON.stringify(PKG)}) + ");" +
            "const { parentPort, workerData } = require('worker_threads');" +
            "if (workerData) $as().add((as) => as.setTimeout(60000)).execute();" +
            "$as().add((as) => as.success(1)).add((as, v) => parentPort.postMessage(v)).execute();";
        let ended = 0;
        for (const terminate of [false, true]) {
            const w = new Worker(code, { eval: true, workerData: terminate });
            w.on('message', (v) => { if (terminate) w.terminate(); else if (v !== 1) process.exit(3); });
            w.on('exit', () => { if (++ended === 2) console.log('workers ended'); });
        }
    `;
    const res = require('child_process').spawnSync(process.execPath, ['-e', script], {
        encoding: 'utf8', timeout: 120000,
    });
    assert.strictEqual(res.signal, null, res.stderr);
    assert.strictEqual(res.status, 0, res.stderr);
    assert.strictEqual(res.stdout.trim(), 'workers ended');
});
