'use strict';

// futoin-polyglot/native sync objects for flows driven from C: a JS object
// with lock(as)/unlock(as) adapted to FutoInSync, and our Mutex handed to C.
// Registered only for futoin-polyglot (futoin-asyncsteps has no native side).

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { $as, isPolyglot, runFlow } = require('./helpers');

const C_SOURCE = `
#define _POSIX_C_SOURCE 200809L
#include <futoin/binarysteps.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

static const FutoInType k_str = {FTN_TYPE_STRING, NULL};

static void inner(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &k_str;
    out.arg0.cstr = "inner";
    out.arg0.length = 5;
    bsi->api->success(bsi, &out);
}

/* a C step completed by a thread of its own, a little later */
static void* complete_later(void* p)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    FutoInAsyncSteps* bsi = p;
    bsi->api->success(bsi, NULL);
    return NULL;
}

/* a thread that never completes its step */
static void* never(void* p)
{
    (void)p;
    for (;;) {
        struct timespec ts = {3600, 0};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

__attribute__((visibility("default"))) void t_thread(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    pthread_t th;
    bsi->api->waitExternal(bsi);
    if (pthread_create(&th, NULL, data ? never : complete_later, bsi) != 0) {
        bsi->api->handle_error(bsi, "InternalError", "no thread");
        return;
    }
    pthread_detach(th);
}

/* a C step adding a step protected by the FutoInSync* given as data */
__attribute__((visibility("default"))) void t_sync(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->addSync(bsi, (FutoInSync*)data, NULL, inner, NULL);
}
`;

const buildLib = () => {
    const abi = path.resolve(__dirname, '..', '..', 'abi', 'include');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'futoin-polyglot-sync-'));
    const src = path.join(dir, 'sync.c');
    const lib = path.join(dir, 'libsync.so');
    fs.writeFileSync(src, C_SOURCE);
    const r = spawnSync(process.env.CC || 'cc', ['-std=c11', '-shared', '-fPIC', '-I', abi, '-o', lib, src, '-lpthread'],
        { encoding: 'utf8' });
    assert.strictEqual(r.status, 0, r.stderr);
    test.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    return lib;
};

if (isPolyglot && fs.existsSync(path.resolve(__dirname, '..', '..', 'abi', 'include'))) {
    const native = require('../native');
    const lib = buildLib();

    test('a JS lock/unlock object protects a step added by C', async () => {
        const trace = [];
        const sync = native.syncAdapter({
            lock(as) {
                trace.push('lock');
                as.waitExternal();
                setImmediate(() => as.success()); // acquired after waiting
            },
            unlock(as) {
                trace.push('unlock');
            },
        });
        const step = native.cstep(lib, 't_sync', { data: sync });
        const r = await runFlow((as) => {
            as.add(step);
        });
        assert.strictEqual(r.err, null);
        assert.deepStrictEqual(trace, ['lock', 'unlock']);
        assert.deepStrictEqual(r.args, ['inner']);
    });

    test('a JS sync object rejecting in lock() fails the C flow', async () => {
        const sync = native.syncAdapter({
            lock(as) {
                as.error('DefenseRejected', 'full');
            },
            unlock(as) {
                assert.fail('unlock without lock');
            },
        });
        const r = await runFlow((as) => {
            as.add(native.cstep(lib, 't_sync', { data: sync }));
        });
        assert.strictEqual(r.err, 'DefenseRejected');
        assert.strictEqual(r.info, 'full');
    });

    test('a Mutex of futoin-polyglot is shared by a C step and a JS flow', async () => {
        const mtx = new $as.Mutex();
        const trace = [];
        let release;
        const holder = $as().sync(mtx, (as) => {
            trace.push('js holds');
            as.waitExternal();
            release = () => {
                trace.push('js releases');
                as.success();
            };
        }).promise();
        const c = runFlow((as) => {
            as.add(native.cstep(lib, 't_sync', { data: native.syncAddress(mtx) }));
        });
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepStrictEqual(trace, ['js holds']); // the C step waits for the lock
        release();
        await holder;
        const r = await c;
        assert.strictEqual(r.err, null);
        assert.deepStrictEqual(r.args, ['inner']);
    });

    test('syncAdapter() and syncAddress() refuse other values', () => {
        assert.throws(() => native.syncAdapter({ lock() {} }), TypeError);
        assert.throws(() => native.syncAdapter(null), TypeError);
        assert.throws(() => native.syncAddress({}), TypeError);
    });
}

if (isPolyglot && fs.existsSync(path.resolve(__dirname, '..', '..', 'abi', 'include'))) {
    const lib = buildLib();
    const run = (keep) => spawnSync(process.execPath, ['-e', `
        const native = require(${JSON.stringify(path.resolve(__dirname, '..', 'native.js'))});
        const $as = require(${JSON.stringify(path.resolve(__dirname, '..'))});
        let done = false;
        if (${keep}) native.keepAlive();
        // with keepAlive() the thread completes the step; without, it never does
        $as().add(native.cstep(${JSON.stringify(lib)}, 't_thread', { data: ${keep ? '0n' : '1n'} }))
            .add((as) => { done = true; if (${keep}) native.release(); })
            .execute();
        process.on('exit', () => process.stdout.write(done ? 'completed' : 'exited first'));
    `], { encoding: 'utf8', timeout: 60000 });

    test('keepAlive() keeps Node running until a C thread completes the step', () => {
        const r = run(true);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.strictEqual(r.stdout, 'completed');
    });

    test('without keepAlive() a step waiting only for a C thread does not keep Node running', () => {
        const r = run(false);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.strictEqual(r.stdout, 'exited first');
    });

    test('release() without keepAlive() throws', () => {
        assert.throws(() => require('../native').release(), /without keepAlive/);
    });
}
