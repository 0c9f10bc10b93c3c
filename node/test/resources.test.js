'use strict';

// Regression guard for leaks of callback indices and step handles: after a
// warm-up, thousands more flows of every kind leave the registry and the
// handle table where they were.
const test = require('node:test');
const assert = require('node:assert');
const $as = require('..');
const N = require('../lib/binding');
const reg = require('../lib/registry');
const { deferred, T } = require('./helpers');

const runFlow = (i) => {
    const as = $as();
    as.add((as) => {
        as.add((as) => as.success(i, { i }), (as, err) => as.success());
        if (i % 3 === 0) {
            as.add((as) => as.error('Planned', 'info'));
        }
        as.add((as) => {}, (as, err) => as.success());
    });
    as.add((as) => {
        const p = as.parallel();
        p.add((as) => as.repeat(3, (as, n) => {
            if (n === 1) {
                as.continue();
            }
        }));
        p.add((as) => as.loop((as) => as.break()));
    });
    as.add((as) => {
        as.waitExternal();
        as.setCancel((as) => {});
        if (i % 5 === 0) {
            as.setTimeout(1);
        } else {
            setImmediate(() => as.success());
        }
    }, (as, err) => as.success());
    // every third flow ends with its unhandled 'Planned' error
    return as.promise().catch((e) => assert.strictEqual(e.message, 'Planned'));
};

const runMany = async (n, from) => {
    const batch = [];
    for (let i = 0; i < n; ++i) {
        batch.push(runFlow(from + i));
        if (batch.length === 50) {
            await Promise.all(batch.splice(0));
        }
    }
    await Promise.all(batch);
};

test('flows of every kind do not grow the callback registry or the handle table', async () => {
    await runMany(500, 0);
    reg.allocK(); // releases what C gave back
    const before = { fns: reg.FNS.length, slots: N.stats().slots };
    await runMany(3000, 500);
    reg.allocK();
    const after = { fns: reg.FNS.length, slots: N.stats().slots };
    assert.ok(after.fns <= before.fns + 64, `callback registry grew: ${before.fns} -> ${after.fns}`);
    assert.ok(after.slots <= before.slots + 64, `handle table grew: ${before.slots} -> ${after.slots}`);
    assert.ok(N.stats().live < 16, `handles still in use: ${N.stats().live}`);
    // an index freed twice (by JS after its step ran and by C's cleanup)
    // would be handed out twice
    assert.strictEqual(new Set(reg.FREE).size, reg.FREE.length, 'a callback index is free twice');
    for (const k of reg.FREE) {
        assert.ok(reg.FNS[k] === undefined || reg.FNS[k] === null, `free index ${k} holds a callback`);
    }
});

test('a cancelled flow gives its handles back', async () => {
    const base = N.stats().live;
    const roots = [];
    for (let i = 0; i < 100; ++i) {
        const as = $as();
        as.add((as) => {
            as.waitExternal();
        });
        as.execute();
        roots.push(as);
    }
    assert.ok(N.stats().live >= base + 100);
    for (const as of roots) {
        as.cancel();
    }
    assert.strictEqual(N.stats().live, base);
});

test('step interfaces are not kept once their flow ended', () => {
    // a child process with --expose-gc: weak references to the interfaces
    // of steps of every shape must die with their flows
    const { spawnSync } = require('child_process');
    const script = `
        const $as = require(${JSON.stringify(require('./helpers').IMPL)});
        const refs = [];
        const keep = (as) => refs.push(new WeakRef(as));
        const flows = [];
        for (let i = 0; i < 50; ++i) {
            const root = $as();
            root.add((as) => {
                keep(as);
                as.add((as) => {
                    keep(as);
                    as.add((as) => keep(as));
                });
            }, (as, err) => {});
            root.add((as) => {
                keep(as);
                as.add((as) => keep(as));
            });
            root.add((as) => {
                keep(as);
                as.await(Promise.resolve(i));
            });
            root.add((as) => as.repeat(3, (as) => {
                keep(as);
                as.add((as) => keep(as));
            }));
            flows.push(root.promise());
        }
        // the flows ended; their last C cleanup runs on the loop turn after
        Promise.all(flows).then(() => new Promise((resolve) => setImmediate(resolve))).then(() => {
            global.gc();
            const alive = refs.filter((r) => r.deref() !== undefined).length;
            console.log(JSON.stringify({ refs: refs.length, alive }));
        });
    `;
    const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
    assert.strictEqual(r.status, 0, r.stderr);
    const { refs, alive } = JSON.parse(r.stdout);
    assert.ok(refs >= 50 * 10, `refs ${refs}`);
    assert.ok(alive <= 2, `${alive} of ${refs} step interfaces still alive after their flows ended`);
});

test('flows that ended keep nothing their steps captured while the process idles', () => {
    // ended by a step timeout (in a timer event), after an await() (in a
    // promise reaction), at once inside execute() called from a Node timer
    // (no turn of ours), and by waitExternal() completed from a timer: no
    // later flow comes to sweep them
    const { spawnSync } = require('child_process');
    const script = `
        const $as = require(${JSON.stringify(require('./helpers').IMPL)});
        const refs = [];
        const big = () => { const o = { data: new Array(1000).fill(1) }; refs.push(new WeakRef(o)); return o; };
        const track = (root) => { refs.push(new WeakRef(root)); return root; };
        for (let i = 0; i < 20; ++i) {
            const a = big();
            track($as()).add((as) => { a.data.length; as.setTimeout(1); }, (as, err) => as.success()).execute();
            const b = big();
            track($as()).add((as) => as.await(Promise.resolve(b.data.length))).execute();
            const c = big();
            setTimeout(() => track($as()).add((as) => { c.data.length; }).execute(), 2);
            const d = big();
            track($as()).add((as) => { d.data.length; as.waitExternal(); setTimeout(() => as.success(), 3); }).execute();
        }
        setTimeout(() => {
            global.gc();
            const alive = refs.filter((r) => r.deref() !== undefined).length;
            console.log(JSON.stringify({ refs: refs.length, alive }));
        }, 100);
    `;
    const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
    assert.strictEqual(r.status, 0, r.stderr);
    const { refs, alive } = JSON.parse(r.stdout);
    assert.strictEqual(refs, 20 * 8);
    // a few of the last ones may stay in V8's caches (futoin-asyncsteps: 5)
    assert.ok(alive <= 10, `${alive} of ${refs} objects of ended flows still held`);
});

test('root.cancel() whose cancel handlers take handles while the handle table grows', () => {
    // the table moved under a cancel() that kept a pointer into it (a use
    // after free the ASan run of these tests sees)
    let cancelled = 0;
    const onCancel = () => ++cancelled;
    const waiting = () => $as().add((as) => as.setCancel(onCancel)).execute();
    const keep = [];
    for (let i = 0; i < 1500; i++) {
        // flows that stay make the table grow; each cancel() runs a handler
        keep.push(i % 2 ? waiting() : $as().add((as) => {
            as.setCancel(onCancel);
            as.add((as) => as.setCancel(onCancel));
        }).execute());
        waiting().cancel();
    }
    assert.strictEqual(cancelled, 1500);
    keep.forEach((r) => r.cancel());
    assert.strictEqual(cancelled, 1500 + 750 + 750 * 2);
});

test('more flows ending in one loop turn than C can list at once are all finished for JS', T, async () => {
    // C lists the roots that finished for JS to forget; past the list's
    // room they were dropped: those roots stayed running for good
    const roots = [];
    const ended = deferred();
    let done = 0;
    for (let i = 0; i < 3000; ++i) {
        const r = $as();
        r.add((as) => {
            as.waitExternal();
            setTimeout(() => as.success(), 5); // all in one timers phase
        }).add((as) => {
            if (++done === 3000) {
                ended.resolve();
            }
        });
        r.execute();
        roots.push(r);
    }
    await ended.promise;
    await new Promise((resolve) => setImmediate(resolve));
    let again = 0;
    await Promise.all(roots.map((r) => r.add((as) => {
        ++again;
    }).promise()));
    assert.strictEqual(again, 3000);
});

test('a flow that finds the handle table full fails with InternalError, and flows run again once it has room', () => {
    // a child with a table of 512 handles (FUTOIN_POLYGLOT_MAX_HANDLES):
    // 300 waiting flows hold two each; the new flow's promise() heard
    // nothing (it stayed pending for good)
    const { spawnSync } = require('child_process');
    const script = `
        const $as = require(${JSON.stringify(require('path').join(__dirname, '..'))});
        const waiting = [];
        for (let i = 0; i < 300; ++i) {
            $as().add((as) => { as.waitExternal(); waiting.push(as); }).execute();
        }
        const out = { waiting: waiting.length };
        const r = $as();
        r.add((as) => as.success(1)).add((as, v) => { out.ran = v; });
        r.promise().then(() => { out.first = 'settled'; }, (e) => {
            out.first = e.message + ': ' + r.state.error_info;
        }).then(async () => {
            for (const as of waiting) {
                as.success();
            }
            await new Promise((resolve) => setImmediate(resolve));
            await $as().add((as) => as.success(2)).add((as, v) => { out.ran = v; }).promise();
            console.log(JSON.stringify(out));
        });
    `;
    const r = spawnSync(process.execPath, ['-e', script], {
        encoding: 'utf8', timeout: 60000, env: { ...process.env, FUTOIN_POLYGLOT_MAX_HANDLES: '512' },
    });
    assert.strictEqual(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim());
    assert.ok(out.waiting > 200 && out.waiting < 300, `${out.waiting}`); // the others failed at their first step
    assert.strictEqual(out.first, 'InternalError: too many active steps');
    assert.strictEqual(out.ran, 2);
});

test('with the handle table full, the error handlers of the flows that fail run (they never ran: the flows went silently)', () => {
    const { spawnSync } = require('child_process');
    const script = `
        const $as = require(${JSON.stringify(require('path').join(__dirname, '..'))});
        const out = { started: 0, failed: 0, thrown: 0, infos: {} };
        for (let i = 0; i < 300; ++i) {
            try {
                $as().add((as) => { out.started++; as.waitExternal(); }, (as, err) => {
                    out.failed++;
                    const key = err + ': ' + as.state.error_info;
                    out.infos[key] = (out.infos[key] || 0) + 1;
                }).execute();
            } catch (e) {
                out.thrown++;
            }
        }
        console.log(JSON.stringify(out));
    `;
    const r = spawnSync(process.execPath, ['-e', script], {
        encoding: 'utf8', timeout: 60000, env: { ...process.env, FUTOIN_POLYGLOT_MAX_HANDLES: '512' },
    });
    assert.strictEqual(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim());
    assert.strictEqual(out.thrown, 0);
    assert.ok(out.failed > 0);
    assert.strictEqual(out.started + out.failed, 300);
    assert.deepStrictEqual(Object.keys(out.infos), ['InternalError: too many active steps']);
});

// V8 holds the maps its optimized code checks weakly: a full GC at a moment
// no step interface, parallel or root is alive (an idle process) dropped
// them, and the engine's hot functions were deoptimized, to be compiled
// again under load (seen as runs several times slower after each gc())
test('a full GC while no flow runs leaves the hot functions of the JS API optimized', () => {
    const script = `
        const $as = require(${JSON.stringify(require.resolve('..'))});
        const branch = (as) => {};
        let left = 0;
        let done = null;
        const start = () => {
            const r = $as();
            r.parallel().add(branch).add((as) => as.add(branch));
            r.add((as) => as.successStep()).add(fin).execute();
        };
        const fin = (as) => {
            if (--left === 0) {
                done();
            } else if (left % 16 === 0) {
                queueMicrotask(start);
            } else {
                start();
            }
        };
        const round = (n) => new Promise((resolve) => {
            left = n;
            done = resolve;
            start();
        });
        (async () => {
            for (let i = 0; i < 4; ++i) {
                await round(20000);
                await new Promise((resolve) => setImmediate(resolve));
                global.gc();
            }
        })();
    `;
    const r = require('child_process').spawnSync(process.execPath,
        ['--expose-gc', '--trace-opt', '--trace-deopt', '-e', script],
        { encoding: 'utf8', timeout: 120000, maxBuffer: 1 << 26 });
    assert.strictEqual(r.status, 0, r.stderr);
    const lines = r.stdout.split('\n');
    // they were optimized, and stayed so
    assert.ok(lines.some((l) => /completed optimizing .*<JSFunction runHost /.test(l)), 'runHost optimized');
    const ours = /SharedFunctionInfo (AsyncStepProtector|ParallelStep|AsyncSteps|runHost|onStep|runBatch|stepStarts)>.*reason: weak objects/;
    assert.deepStrictEqual(lines.filter((l) => ours.test(l)), []);
});
