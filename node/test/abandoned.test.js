'use strict';

// Flows that wait for an event nothing can deliver any more (the step's
// interface and the root unreachable) go with the garbage collector, as
// futoin-asyncsteps' flows do: they neither leak nor use up the handles new
// flows need. Flows something can still complete stay and go on.
const test = require('node:test');
const assert = require('node:assert');
const { spawnSync } = require('child_process');
const { IMPL, isPolyglot } = require('./helpers');

/* run `body` (the text of an async function of $as, N (our binding or
 * null), gcAll()) in a child process with --expose-gc; its JSON result */
const inChild = (body) => {
    const script = `
        const $as = require(${JSON.stringify(IMPL)});
        let N = null;
        try { N = require(${JSON.stringify(IMPL + '/lib/binding')}); } catch (e) { /* the reference */ }
        const turn = () => new Promise((resolve) => setImmediate(resolve));
        /* collections and their finalizers, until nothing more goes
         * (alive() derefs: the objects it sees stay until that job ends,
         * so a turn comes between it and the next collection); at least
         * ten: a flow is held weakly after two sweeps, and a sweep comes
         * with every third major collection (src/AsyncSteps.js probe) */
        const gcAll = async (alive) => {
            let before = -1;
            let same = 0;
            for (let i = 0; i < 40 && (same < 3 || i < 10); ++i) {
                global.gc();
                await turn();
                const now = alive();
                await turn();
                same = now === before ? same + 1 : 0;
                before = now;
            }
        };
        (async () => { ${body} })().then((r) => console.log(JSON.stringify(r)), (e) => {
            console.error(e && e.stack || e);
            process.exit(3);
        });
    `;
    const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 120000 });
    assert.strictEqual(r.status, 0, `child failed: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').pop());
};

test('flows abandoned while they wait are collected', () => {
    const r = inChild(`
        const refs = [];
        const emitters = [];
        const shapes = [
            // a plain waiting step
            (root) => root.add((as) => as.waitExternal()),
            // an event source holds the step; a cancel handler holds the
            // listener, so the cancel handler refers to the flow
            (root) => root.add((as) => {
                const em = { listeners: [] };
                const listener = () => as.success();
                em.listeners.push(listener);
                as.setCancel(() => { em.listeners.length = 0; void listener; });
                as.waitExternal();
            }),
            // a sub-step with an error handler waits; a step queued after it
            // refers to the root
            (root) => root.add((as) => {
                as.add((as) => as.waitExternal(), (as, err) => { void root; });
            }).add((as) => { root.state.after = true; }),
            // parallel branches wait, one in a loop body
            (root) => {
                const p = root.parallel();
                p.add((as) => as.waitExternal());
                p.add((as) => as.loop((as) => as.waitExternal()));
            },
        ];
        const per = 800; // past the count at which waiting flows are looked at
        for (let i = 0; i < per * shapes.length; ++i) {
            const root = $as();
            shapes[i % shapes.length](root);
            root.execute();
            refs.push(new WeakRef(root));
        }
        await turn();
        const alive = () => refs.filter((w) => w.deref() !== undefined).length;
        await gcAll(alive);
        return { flows: refs.length, alive: alive(), live: N ? N.stats().live : 0 };
    `);
    assert.strictEqual(r.flows, 3200);
    assert.ok(r.alive <= 64, `${r.alive} of ${r.flows} abandoned flows still alive`);
    if (isPolyglot) {
        assert.ok(r.live <= 256, `${r.live} handles still in use`);
    }
});

test('a flow whose waiting step is still reachable goes on after collections', () => {
    const r = inChild(`
        const kept = [];
        const done = [];
        for (let i = 0; i < 3000; ++i) {
            const root = $as();
            root.add((as) => {
                as.add((as) => {
                    as.waitExternal();
                    as.setCancel(() => done.push('cancel' + i));
                    if (i % 100 === 0) {
                        kept.push(as); // only the step's interface is kept
                    }
                }, (as, err) => done.push('error' + i));
            }).add((as, v) => {
                root.state.v = v; // refers to the root: held only by the flow
                done.push(v);
            });
            root.execute();
        }
        await turn();
        await gcAll(() => 0);
        for (const as of kept) {
            as.success('v' + kept.indexOf(as));
        }
        for (let i = 0; i < 5 && done.length < kept.length; ++i) {
            await turn();
        }
        // a root kept through the step can be cancelled too
        const root = $as();
        let step = null;
        root.add((as) => { step = as; as.waitExternal(); as.setCancel(() => done.push('cancelled')); });
        root.execute();
        for (let i = 0; i < 2000; ++i) {
            $as().add((as) => as.waitExternal()).execute();
        }
        await gcAll(() => 0);
        root.cancel();
        // a new flow runs as usual
        let ran = false;
        await $as().add((as) => as.success(1)).add((as, v) => { ran = v === 1; }).promise();
        return { done, ran, kept: kept.length };
    `);
    assert.strictEqual(r.kept, 30);
    const expect = [];
    for (let i = 0; i < 30; ++i) {
        expect.push('v' + i);
    }
    expect.push('cancelled');
    assert.deepStrictEqual(r.done, expect);
    assert.strictEqual(r.ran, true);
});

test('abandoned flows do not use up the handles of new flows', () => {
    const r = inChild(`
        const rounds = 6;
        let ran = 0;
        for (let round = 0; round < rounds; ++round) {
            for (let i = 0; i < 20000; ++i) {
                $as().add((as) => { as.waitExternal(); as.setCancel(() => {}); }).execute();
            }
            await gcAll(() => 0);
            await $as().add((as) => as.success(1)).add((as, v) => { ran += v; }).promise();
        }
        return { ran, rounds, slots: N ? N.stats().slots : 0, live: N ? N.stats().live : 0 };
    `);
    assert.strictEqual(r.ran, r.rounds);
    if (isPolyglot) {
        // 120000 flows waited; the table holds a fraction of their handles
        assert.ok(r.live <= 20000, `${r.live} handles still in use`);
    }
});

test('flows looked at from inside a step go on as usual', () => {
    const r = inChild(`
        const trace = [];
        const outer = $as();
        outer.add((as) => {
            // more flows than the sweep looks past, started inside a step
            for (let i = 0; i < 2500; ++i) {
                $as().add((as) => as.waitExternal()).execute();
            }
            trace.push('started');
            as.add((as) => { trace.push('inner'); as.success(1); });
        }).add((as, v) => trace.push('after:' + v));
        await outer.promise();
        await gcAll(() => 0);
        return { trace };
    `);
    assert.deepStrictEqual(r.trace, ['started', 'inner', 'after:1']);
});

if (isPolyglot) {
    test('a flow whose step C code got with binary() stays while it waits', () => {
        const r = inChild(`
            const native = require(${JSON.stringify(IMPL + '/native')});
            const refs = [];
            for (let i = 0; i < 2000; ++i) {
                const root = $as();
                root.add((as) => {
                    native.binary(as); // C code may complete it through the pointer
                    as.waitExternal();
                });
                root.execute();
                refs.push(new WeakRef(root));
            }
            const alive = () => refs.filter((w) => w.deref() !== undefined).length;
            await gcAll(alive);
            return { alive: alive() };
        `);
        assert.strictEqual(r.alive, 2000);
    });
}

test('a kept root finishing after many flows were collected runs again', () => {
    const r = inChild(`
        let step = null;
        const kept = $as();
        kept.add((as) => { step = as; as.waitExternal(); }).add((as) => { kept.state.ran = 1; });
        kept.execute();
        // collected without an execute() in between: their ends are no
        // finished runs for JS to hear of
        for (let i = 0; i < 3000; ++i) {
            $as().add((as) => as.waitExternal()).execute();
        }
        await turn();
        await gcAll(() => 0);
        step.success();
        await turn();
        await turn();
        kept.add((as) => { kept.state.ran += 10; });
        await kept.promise();
        return { ran: kept.state.ran };
    `);
    assert.strictEqual(r.ran, 11);
});

test('V8 is told of the C memory of the flows that live, so a stream of abandoned flows brings major collections (it grew without bound)', { skip: !isPolyglot && 'the reference has no C memory' }, () => {
    const r = inChild(`
        const roots = [];
        const before = N.externalTold();
        for (let i = 0; i < 20000; ++i) {
            const root = $as();
            root.add((as) => as.waitExternal()).execute();
            roots.push(root);
        }
        const waiting = N.externalTold() - before;
        for (const root of roots) {
            root.cancel();
        }
        await turn();
        return { waiting, after: N.externalTold() };
    `);
    // about 1.5 kB a flow, told in steps of 1024 flows
    assert.ok(r.waiting >= 18 * 1024 * 1536, `told ${r.waiting} bytes for 20000 waiting flows`);
    assert.ok(r.after <= 2 * 1024 * 1536, `still told ${r.after} bytes once they ended`);
});
