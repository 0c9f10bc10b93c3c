'use strict';

// futoin-polyglot/native: C steps (FTN12 binary interface) in JS flows.
// Not part of futoin-asyncsteps: registered only for futoin-polyglot.
// The C library is compiled from the source below with the system compiler.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { $as, IMPL, isPolyglot, runFlow, sub, T } = require('./helpers');

const C_SOURCE = `
#include <futoin/binarysteps.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define API __attribute__((visibility("default")))

static const FutoInType k_int64 = {FTN_TYPE_INT64, NULL};
static const FutoInType k_double = {FTN_TYPE_DOUBLE, NULL};
static const FutoInType k_str = {FTN_TYPE_STRING, NULL};

static int64_t int_arg(const FutoInBinaryValue* v, int* ok)
{
    *ok = 1;
    if (v->type && v->type->flags == FTN_TYPE_INT64) return v->i64;
    if (v->type && v->type->flags == FTN_TYPE_INT32) return v->i32;
    if (v->type && v->type->flags == FTN_TYPE_DOUBLE) return (int64_t)v->d;
    *ok = 0;
    return 0;
}

/* (n) -> (2 * n) as INT64 */
API void t_double(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    int ok;
    int64_t x = int_arg(&args->arg0, &ok);
    if (!ok) {
        bsi->api->handle_error(bsi, "InvalidRequest", "t_double needs a number");
        return;
    }
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_int64;
    out.arg0.i64 = 2 * x;
    bsi->api->success(bsi, &out);
}

/* (string) -> (byte length as INT64, a static string, 0.5) */
API void t_strinfo(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    if (!args->arg0.type || args->arg0.type->flags != FTN_TYPE_STRING) {
        bsi->api->handle_error(bsi, "InvalidRequest", "t_strinfo needs a string");
        return;
    }
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_int64;
    out.arg0.i64 = (int64_t)strlen(args->arg0.cstr);
    out.arg1.type = &k_str;
    out.arg1.cstr = "from C";
    out.arg1.length = 6;
    out.arg2.type = &k_double;
    out.arg2.d = 0.5;
    bsi->api->success(bsi, &out);
}

/* fails with CFail */
API void t_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->handle_error(bsi, "CFail", "failed in C");
}

/* error handler: recovers with ("C handled <code>") */
static char g_msg[128];
API void t_recover(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    strcpy(g_msg, "C handled ");
    strncat(g_msg, code, sizeof(g_msg) - 20);
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_str;
    out.arg0.cstr = g_msg;
    out.arg0.length = (uint32_t)strlen(g_msg);
    bsi->api->success(bsi, &out);
}

/* () -> (data as INT64) */
API void t_data(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_int64;
    out.arg0.i64 = (int64_t)(intptr_t)data;
    bsi->api->success(bsi, &out);
}

/* () -> (1, <empty slot>, 3) */
API void t_gap(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_int64;
    out.arg0.i64 = 1;
    out.arg2.type = &k_int64;
    out.arg2.i64 = 3;
    bsi->api->success(bsi, &out);
}

/* (v) -> ("<flags>:<length>:<first element as a number>", v): as C sees v */
static char g_desc[128];
API void t_describe(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    const FutoInBinaryValue* v = &args->arg0;
    double first = 0;
    if (v->type && (v->type->flags & FTN_TYPE_ARRAY) && v->length) {
        switch (v->type->flags & FTN_BASE_TYPE_MASK) {
        case FTN_TYPE_UINT8: first = ((const uint8_t*)v->p)[0]; break;
        case FTN_TYPE_INT32: first = ((const int32_t*)v->p)[0]; break;
        case FTN_TYPE_DOUBLE: first = ((const double*)v->p)[0]; break;
        case FTN_TYPE_INT64: first = (double)((const int64_t*)v->p)[0]; break;
        default: first = -1; break;
        }
    }
    snprintf(g_desc, sizeof(g_desc), "%d:%u:%g", v->type ? v->type->flags : -1, (unsigned)v->length, first);
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_str;
    out.arg0.cstr = g_desc;
    out.arg0.length = (uint32_t)strlen(g_desc);
    out.arg1 = args->arg0; /* forwarded: the receiver gets it back */
    ((FutoInArgs*)args)->arg0.type = NULL;
    bsi->api->success(bsi, &out);
}

/* keeps the value it receives (zeroes it, as binarysteps.h allows) */
static FutoInBinaryValue g_kept;
API void t_keep(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    g_kept = args->arg0;
    memset((void*)&args->arg0, 0, sizeof(args->arg0));
}

/* releases the kept value on a thread of its own */
static void* release_kept(void* p)
{
    (void)p;
    futoin_reset_binval(&g_kept);
    return NULL;
}
API void t_release_on_thread(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
    pthread_t t;
    pthread_create(&t, NULL, release_kept, NULL);
    pthread_join(t, NULL);
}

/* waits for a timer of the flow's scheduler, then succeeds with (7) */
static void t_later_cb(void* p)
{
    FutoInAsyncSteps* bsi = p;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_int64;
    out.arg0.i64 = 7;
    bsi->api->success(bsi, &out);
}
API void t_later(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 2, bsi, t_later_cb);
}

/* careless producers: a byte array of 4 without its memory, booleans that
 * are neither 0 nor 1 */
static const FutoInType k_u8a = {FTN_TYPE_UINT8 | FTN_TYPE_ARRAY, NULL};
static const FutoInType k_boola = {FTN_TYPE_BOOL | FTN_TYPE_ARRAY, NULL};
static const unsigned char k_bools[] = {2, 0, 1};
API void t_careless(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_u8a;
    out.arg0.p = NULL;
    out.arg0.length = 4;
    out.arg1.type = &k_boola;
    out.arg1.p = k_bools;
    out.arg1.length = 3;
    out.arg2.type = &k_boola;
    out.arg2.p = NULL;
    out.arg2.length = 2;
    bsi->api->success(bsi, &out);
}
`;

const abiInclude = () => {
    for (const dir of [path.join(IMPL, 'abi', 'include'), path.join(IMPL, '..', 'abi', 'include')]) {
        if (fs.existsSync(path.join(dir, 'futoin', 'binarysteps.h'))) {
            return dir;
        }
    }
    throw new Error('FTN12 headers (abi/include) not found');
};

let lib = null;
const buildLib = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'futoin-polyglot-test-'));
    const src = path.join(dir, 'steps.c');
    lib = path.join(dir, 'libteststeps.so');
    fs.writeFileSync(src, C_SOURCE);
    const cc = process.env.CC || 'cc';
    const r = spawnSync(cc, ['-std=c11', '-shared', '-fPIC', '-O1', '-I', abiInclude(), '-o', lib, src, '-lpthread'],
        { encoding: 'utf8' });
    assert.strictEqual(r.status, 0, `${cc} failed: ${r.error || ''} ${r.stderr}`);
};

if (isPolyglot) {
    const native = sub('/native');

    test.before(buildLib);
    test.after(() => {
        if (lib) {
            fs.rmSync(path.dirname(lib), { recursive: true, force: true });
        }
    });

    test('a C step\'s array without memory comes as zeros, its booleans as any byte not 0', T, async () => {
        const r = await runFlow((as) => {
            as.add(native.cstep(lib, 't_careless'));
            as.add((as, bytes, bools, none) => as.success(Buffer.isBuffer(bytes) ? [...bytes] : bytes, bools, none));
        });
        assert.strictEqual(r.err, null);
        assert.deepStrictEqual(r.args, [[0, 0, 0, 0], [true, false, true], [false, false]]);
    });

    test('a C step between JS steps: numbers in and out', T, async () => {
        const r = await runFlow((as) => {
            as.add((as) => as.success(21));
            as.add(native.cstep(lib, 't_double'));
            as.add((as, v) => as.success(v, typeof v));
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(r.args, [42, 'number']);
    });

    test('successStep() then a C step in a step: the C step gets the values, as a JS step would', T, async () => {
        const r = await runFlow((as) => {
            as.successStep(21);
            as.add(native.cstep(lib, 't_double'));
            as.add((as, v) => as.success(v, typeof v));
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(r.args, [42, 'number']);
    });

    test('strings and several values from C', T, async () => {
        const r = await runFlow((as) => {
            as.add((as) => as.success('h\u00e9llo'));
            as.add(native.cstep(lib, 't_strinfo'));
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(r.args, [6, 'from C', 0.5]);
    });

    test('a C error reaches the JS handler with its error_info', T, async () => {
        const r = await runFlow((as) => {
            as.add(native.cstep(lib, 't_fail'));
            as.add((as) => as.success('not reached'));
        });
        assert.strictEqual(r.err, 'CFail');
        assert.strictEqual(r.info, 'failed in C');
        const r2 = await runFlow((as) => {
            as.add((as) => as.success('not a number'));
            as.add(native.cstep(lib, 't_double'));
        });
        assert.strictEqual(r2.err, 'InvalidRequest');
    });

    test('copyFrom() of a model with a C step, on a root and inside a step', T, async () => {
        const model = $as();
        model.add((as) => as.success(21));
        model.add(native.cstep(lib, 't_double'));
        const root = $as();
        root.copyFrom(model);
        root.add((as, v) => as.success(v, 'root'));
        assert.deepStrictEqual(await new Promise((resolve, reject) => {
            root.add((as, ...args) => resolve(args));
            root.execute();
        }), [42, 'root']);
        const r = await runFlow((as) => {
            as.copyFrom(model);
            as.add((as, v) => as.success(v, 'step'));
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(r.args, [42, 'step']);
    });

    test('a C error handler recovers a C step', T, async () => {
        const r = await runFlow((as) => {
            as.add(native.cstep(lib, 't_fail', { onerror: 't_recover' }));
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(r.args, ['C handled CFail']);
    });

    test('a C step with a JS error handler, on a root, a step and a parallel', T, async () => {
        // DESIGN: a C step whose error handler is in another language; it
        // was refused with TypeError
        const seen = [];
        const onerror = (as, err) => {
            seen.push([err, as.state.error_info]);
            as.success('js recovered');
        };
        const root = $as();
        root.add(native.cstep(lib, 't_fail'), onerror);
        root.add((as, v) => as.success(v, 'root'));
        assert.deepStrictEqual(await new Promise((resolve) => {
            root.add((as, ...args) => resolve(args));
            root.execute();
        }), ['js recovered', 'root']);
        const r = await runFlow((as) => {
            as.add(native.cstep(lib, 't_data', { data: 9n }), onerror); // its own data, no error
            as.add((as, v) => {
                seen.push(['data', v]);
                as.add(native.cstep(lib, 't_fail'), onerror);
            });
            as.parallel().add(native.cstep(lib, 't_fail'), onerror);
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(seen, [
            ['CFail', 'failed in C'], ['data', 9], ['CFail', 'failed in C'], ['CFail', 'failed in C'],
        ]);
        assert.throws(() => $as().add(native.cstep(lib, 't_fail', { onerror: 't_recover' }), onerror),
            /one error handler/);
        assert.throws(() => $as().add(native.cstep(lib, 't_fail'), 'not a function'), TypeError);
    });

    test('a JS error handler catches a C error of a sub-step', T, async () => {
        const r = await runFlow((as) => {
            as.add(
                (as) => {
                    as.add(native.cstep(lib, 't_fail'));
                },
                (as, err) => as.success(`JS handled ${err}`),
            );
        });
        assert.deepStrictEqual(r.args, ['JS handled CFail']);
    });

    test('a C error with the code of an earlier JS error sets its own error_info', T, async () => {
        let thrown = null;
        let seen = null;
        await new Promise((resolve) => {
            $as()
                .add(
                    (as) => {
                        as.add(
                            (as) => {
                                try {
                                    as.error('CFail', 'from JS');
                                } catch (e) {
                                    thrown = e;
                                    throw e;
                                }
                            },
                            (as, err) => as.success(),
                        );
                        as.add(native.cstep(lib, 't_fail'));
                    },
                    (as, err) => {
                        seen = [err, as.state.error_info, as.state.last_exception];
                        resolve();
                    },
                )
                .execute();
        });
        assert.strictEqual(seen[0], 'CFail');
        assert.strictEqual(seen[1], 'failed in C');
        assert.strictEqual(seen[2].message, 'CFail');
        assert.notStrictEqual(seen[2], thrown, 'the C error is not the JS exception');
    });

    test('C values with an empty slot before a value keep their positions', T, async () => {
        const got = await runFlow((as) => {
            as.add(native.cstep(lib, 't_gap'));
            as.add((as, ...vals) => as.success(vals));
        });
        assert.deepStrictEqual(got.args, [[1, undefined, 3]]);
    });

    test('typed arrays reach C as arrays of their element type', T, async () => {
        const f64 = new Float64Array([1.5, 2]);
        const i32 = new Int32Array([7, 8, 9]).subarray(1);
        const big = new BigInt64Array([5n]);
        const buf = Buffer.from([4, 5]);
        const view = new DataView(new ArrayBuffer(3));
        const seen = [];
        const got = await runFlow((as) => {
            for (const v of [f64, i32, big, buf, view]) {
                as.add((as) => as.success(v));
                as.add(native.cstep(lib, 't_describe'));
                as.add((as, desc, back) => {
                    seen.push([desc, back === v]);
                });
            }
        });
        assert.strictEqual(got.err, null);
        assert.deepStrictEqual(seen, [
            // FTN_TYPE_ARRAY | DOUBLE, INT32, INT64, UINT8; CUSTOM_OBJECT
            ['31:2:1.5', true],
            ['24:2:8', true],
            ['25:1:5', true],
            ['26:2:4', true],
            ['1:0:0', true],
        ]);
    });

    test('a typed array reaches C as it is when the C step runs, also shrunk or detached since it was passed', T, async () => {
        // C read the JS memory as it was when passed: a crash once it was gone
        const ab = new ArrayBuffer(1 << 20, { maxByteLength: 1 << 24 });
        const u = new Uint8Array(ab);
        u[0] = 9;
        const ab2 = new ArrayBuffer(1 << 20);
        const u2 = new Uint8Array(ab2);
        u2[0] = 7;
        const seen = [];
        const got = await runFlow((as) => {
            as.add((as) => {
                as.success(u);
                if (typeof ab.resize === 'function') {
                    ab.resize(0);
                } else {
                    structuredClone(ab, { transfer: [ab] }); // Node 18: no resizable buffers
                }
            });
            as.add(native.cstep(lib, 't_describe'));
            as.add((as, desc, back) => seen.push([desc, back === u, u.length]));
            as.add((as) => {
                as.success(u2);
                structuredClone(ab2, { transfer: [ab2] }); // its memory goes with the clone
                if (global.gc) {
                    global.gc();
                }
            });
            as.add(native.cstep(lib, 't_describe'));
            as.add((as, desc, back) => seen.push([desc, back === u2, u2.length]));
        });
        assert.strictEqual(got.err, null);
        assert.deepStrictEqual(seen, [['26:0:0', true, 0], ['26:0:0', true, 0]]);
        // JS memory, not a copy: a change after success() is what C reads
        const u3 = new Int32Array([1, 2]);
        const seen3 = [];
        const got3 = await runFlow((as) => {
            as.add((as) => {
                as.success(u3);
                u3[0] = 5;
            });
            as.add(native.cstep(lib, 't_describe'));
            as.add((as, desc, back) => seen3.push(desc, back === u3));
        });
        assert.strictEqual(got3.err, null);
        assert.deepStrictEqual(seen3, ['24:2:5', true]);
    });

    test('a JS value C keeps and releases on a thread of its own is freed', T, () => {
        // its reference was dropped there without being deleted: the value
        // lived forever (V8 is not for other threads: released on the JS one)
        const script = `
            const $as = require(${JSON.stringify(IMPL)});
            const native = require(${JSON.stringify(path.join(IMPL, 'native'))});
            const lib = ${JSON.stringify(lib)};
            const refs = [];
            const flows = [];
            for (let i = 0; i < 20; ++i) {
                flows.push($as()
                    .add((as) => {
                        const o = { i };
                        refs.push(new WeakRef(o));
                        as.success(o);
                    })
                    .add(native.cstep(lib, 't_keep'))
                    .add(native.cstep(lib, 't_release_on_thread'))
                    .promise());
            }
            Promise.all(flows).then(() => new Promise((resolve) => setImmediate(resolve))).then(() => {
                global.gc();
                console.log(refs.filter((r) => r.deref() !== undefined).length);
            });
        `;
        const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
        assert.strictEqual(r.status, 0, r.stderr);
        assert.strictEqual(r.stdout.trim(), '0');
    });

    test('cstep data option reaches the C callback', T, async () => {
        const r = await runFlow((as) => {
            as.add(native.cstep(lib, 't_data', { data: 1234n }));
        });
        assert.deepStrictEqual(r.args, [1234]);
    });

    test('a C step waiting for a timer of the scheduler', T, async () => {
        const r = await runFlow((as) => {
            as.add(native.cstep(lib, 't_later'));
            as.add((as, v) => as.success(v + 1));
        });
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(r.args, [8]);
    });

    test('C steps on a root, in parallel branches and in loops', T, async () => {
        const root = $as();
        const got = [];
        root.add((as) => as.success(1));
        root.add(native.cstep(lib, 't_double'));
        root.add((as, v) => got.push(v));
        root.add((as) => {
            as.parallel()
                .add(native.cstep(lib, 't_later'))
                .add(native.cstep(lib, 't_data', { data: 5n }));
        });
        root.repeat(3, (as, i) => {
            as.add((as) => as.success(i));
            as.add(native.cstep(lib, 't_double'));
            as.add((as, v) => got.push(v));
        });
        await root.promise();
        assert.deepStrictEqual(got, [2, 0, 2, 4]);
    });

    test('binary(), isNative(), toolAddress() and wrap()', T, async () => {
        let addr = null;
        let native_ = null;
        const r = await runFlow((as) => {
            addr = native.binary(as);
            native_ = native.isNative(addr);
            const w = native.wrap(addr);
            w.add((as) => as.success('through wrap'));
        });
        assert.strictEqual(typeof addr, 'bigint');
        assert.notStrictEqual(addr, 0n);
        assert.strictEqual(native_, true);
        assert.strictEqual(r.err, null, r.info);
        assert.deepStrictEqual(r.args, ['through wrap']);
        assert.strictEqual(typeof native.toolAddress(), 'bigint');
        assert.notStrictEqual(native.toolAddress(), 0n);
        assert.strictEqual(typeof native.binary($as()), 'bigint');
    });

    test('wrap() of a JS root\'s binary() is that root: executed through it, its steps run', T, async () => {
        // an internal TypeError came out of execute() and no step ran
        const seen = [];
        const r = $as();
        r.add((as) => seen.push('first'));
        const w = native.wrap(native.binary(r));
        assert.strictEqual(w, r);
        w.add((as) => seen.push('added through wrap'));
        await new Promise((resolve) => w.add((as) => resolve()).execute());
        assert.deepStrictEqual(seen, ['first', 'added through wrap']);
    });

    /* addresses in the middle of large gaps of this process's memory map,
     * read now: a fixed one may be mapped (ASLR put a heap or a library
     * there, and the test failed at random) */
    const unmappedAddresses = () => {
        const spans = fs.readFileSync('/proc/self/maps', 'utf8').trim().split('\n')
            .map((line) => line.split(' ')[0].split('-').map((x) => BigInt(`0x${x}`)));
        const out = [];
        for (let i = 0; i + 1 < spans.length && out.length < 3; ++i) {
            const gap = spans[i + 1][0] - spans[i][1];
            if (gap >= 1n << 24n) {
                out.push((spans[i][1] + gap / 2n) & ~0xfffn);
            }
        }
        assert.ok(out.length > 0, 'no large gap in /proc/self/maps');
        return out;
    };

    test('native argument errors', () => {
        assert.throws(() => native.cstep(lib, 'no_such_symbol'));
        assert.throws(() => native.cstep(path.join(path.dirname(lib), 'missing.so'), 't_double'));
        assert.throws(() => native.symbol(1, 2), TypeError);
        assert.throws(() => native.binary({}), TypeError);
        assert.throws(() => $as().add(native.cstep(lib, 't_fail', { onerror: 't_recover' }), (as, err) => {}),
            TypeError);
        // addresses that can be no object were read: a crash
        for (const bad of [1, 12345n, 0x100001n, 2n ** 60n]) {
            assert.strictEqual(native.isNative(bad), false);
            assert.throws(() => native.wrap(bad), TypeError);
        }
        assert.strictEqual(native.isNative(0), false);
        // plausible addresses of memory that is not mapped were read: a crash
        for (const unmapped of [0x10000n, ...unmappedAddresses()]) {
            assert.strictEqual(native.isNative(unmapped), false);
            assert.throws(() => native.wrap(unmapped), TypeError);
        }
    });

    test('with native addons disabled (node --no-addons) require() says so, not that the addon is not built', () => {
        const res = spawnSync(process.execPath, ['--no-addons', '-e', `
            try { require(${JSON.stringify(IMPL)}); } catch (e) { console.log(JSON.stringify([e.code, e.message])); }
        `], { encoding: 'utf8' });
        assert.strictEqual(res.status, 0, res.stderr);
        const [code, message] = JSON.parse(res.stdout);
        assert.strictEqual(code, 'ERR_DLOPEN_DISABLED');
        assert.match(message, /^futoin-polyglot: .*native addons are disabled.*--no-addons/);
        assert.doesNotMatch(message, /not built/);
    });
}
