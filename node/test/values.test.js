'use strict';

// JS values of every type pass between JS steps unchanged: primitives equal
// (Object.is), objects as the very same object, any number of them.

const test = require('node:test');
const assert = require('node:assert');
const { $as, runFlow, deferred, T } = require('./helpers');

class Point {
    constructor(x) {
        this.x = x;
    }
}

const VALUES = () => [
    ['undefined', undefined],
    ['null', null],
    ['true', true],
    ['false', false],
    ['zero', 0],
    ['negative zero', -0],
    ['integer', 42],
    ['negative integer', -7],
    ['max safe integer', Number.MAX_SAFE_INTEGER],
    ['beyond safe integer', 2 ** 60],
    ['int64 overflow', 2 ** 64],
    ['fraction', 1.5],
    ['tiny', Number.MIN_VALUE],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
    ['BigInt', 12345678901234567890n],
    ['negative BigInt', -5n],
    ['huge BigInt', 2n ** 100n],
    ['empty string', ''],
    ['string', 'hello'],
    ['unicode string', 'h\u00e9llo \u2713 \ud83d\ude00'],
    ['string with NUL', 'a\u0000b'],
    ['lone surrogate', '\ud800x'],
    ['symbol', Symbol('s')],
    ['object', { a: 1, nested: { b: [2] } }],
    ['array', [1, 'two', null]],
    ['function', function named() {}],
    ['arrow function', () => 1],
    ['class instance', new Point(3)],
    ['Date', new Date(0)],
    ['RegExp', /x/g],
    ['Map', new Map([[1, 2]])],
    ['Set', new Set([1])],
    ['Error', new Error('not thrown')],
    ['Buffer', Buffer.from('bytes')],
    ['Uint8Array', new Uint8Array([1, 2, 3])],
    ['Float64Array', new Float64Array([1.5])],
    ['ArrayBuffer', new ArrayBuffer(4)],
    ['Promise', Promise.resolve(1)],
    ['frozen object', Object.freeze({ f: 1 })],
    ['null-prototype object', Object.create(null)],
    ['Proxy', new Proxy({}, {})],
    ['WeakMap', new WeakMap()],
];

const show = (v) => {
    try {
        return typeof v === 'string' ? JSON.stringify(v) : String(v);
    } catch (e) {
        return Object.prototype.toString.call(v);
    }
};

const same = (got, want, name) => {
    if (!Object.is(got, want)) {
        assert.fail(`${name}: ${show(got)} is not ${show(want)}`);
    }
};

test('each type of value passes from step to step unchanged', T, async () => {
    for (const [name, v] of VALUES()) {
        const r = await runFlow((as) => {
            as.add((as) => as.success(v));
            as.add((as, got) => {
                same(got, v, name);
                as.success(got);
            });
        });
        assert.strictEqual(r.err, null, `${name}: ${r.err} ${r.info}`);
        assert.strictEqual(r.args.length, 1, name);
        same(r.args[0], v, name);
    }
});

test('all the types at once, in many arguments', T, async () => {
    const vals = VALUES().map(([, v]) => v);
    let got = null;
    const r = await runFlow((as) => {
        as.add((as) => as.success(...vals));
        as.add(function(as) {
            got = Array.from(arguments).slice(1);
            as.success(...got);
        });
    });
    assert.strictEqual(r.err, null);
    assert.strictEqual(got.length, vals.length);
    vals.forEach((v, i) => same(got[i], v, `#${i}`));
    vals.forEach((v, i) => same(r.args[i], v, `result #${i}`));
});

test('0 to 8 arguments: the next step gets exactly as many', T, async () => {
    for (let n = 0; n <= 8; ++n) {
        const vals = Array.from({ length: n }, (_, i) => ({ i }));
        let count = -1;
        let got = null;
        await runFlow((as) => {
            as.add((as) => as.success(...vals));
            as.add(function(as) {
                count = arguments.length - 1;
                got = Array.from(arguments).slice(1);
            });
        });
        assert.strictEqual(count, n, `${n} arguments`);
        vals.forEach((v, i) => assert.strictEqual(got[i], v));
    }
});

test('trailing undefined arguments are still counted', T, async () => {
    let count = -1;
    await runFlow((as) => {
        as.add((as) => as.success(1, undefined, undefined));
        as.add(function(as) {
            count = arguments.length - 1;
        });
    });
    assert.strictEqual(count, 3);
});

test('values keep identity through sub-steps, loops, sync and handlers', T, async () => {
    const obj = { id: 'obj' };
    const fn = () => obj;
    const sym = Symbol('kept');
    const mtx = new $as.Mutex();
    const r = await runFlow((as) => {
        as.add((as) => {
            as.add((as) => as.add((as) => as.success(obj, fn, sym)));
        });
        as.sync(mtx, (as, a, b, c) => as.success(a, b, c));
        as.add((as, a, b, c) => {
            as.add((as) => as.error('Oops'), (as, err) => as.success(a, b, c));
        });
        as.add((as, a, b, c) => {
            as.repeat(1, (as, i) => {});
            as.successStep(a, b, c);
        });
    });
    assert.strictEqual(r.err, null, r.info);
    assert.strictEqual(r.args[0], obj);
    assert.strictEqual(r.args[1], fn);
    assert.strictEqual(r.args[2], sym);
});

test('values keep identity through await() and promise()', T, async () => {
    const obj = { id: 'awaited' };
    const d = deferred();
    const root = $as();
    root.await(d.promise);
    root.add((as, v) => as.success(v));
    const p = root.promise();
    setTimeout(() => d.resolve(obj), 1);
    assert.strictEqual(await p, obj);

    const big = 2n ** 70n;
    assert.strictEqual(await $as().add((as) => as.success(big)).promise(), big);
});

test('values pass across an external success() and through the state', T, async () => {
    const buf = Buffer.from('external');
    const r = await runFlow((as) => {
        as.add((as) => {
            as.waitExternal();
            setTimeout(() => as.success(buf, 7n, 'x'), 1);
        });
        as.add((as, b, n, s) => {
            as.state.kept = b;
            as.success(b, n, s);
        });
    });
    assert.strictEqual(r.args[0], buf);
    assert.strictEqual(r.args[1], 7n);
    assert.strictEqual(r.args[2], 'x');
    assert.strictEqual(r.state.kept, buf);
});

test('a value mutated by a later step is the same object', T, async () => {
    const obj = { n: 0 };
    const r = await runFlow((as) => {
        as.add((as) => as.success(obj));
        as.add((as, o) => {
            o.n += 1;
            as.success(o);
        });
        as.add((as, o) => {
            o.n += 1;
            as.success(o);
        });
    });
    assert.strictEqual(r.args[0], obj);
    assert.strictEqual(obj.n, 2);
});
