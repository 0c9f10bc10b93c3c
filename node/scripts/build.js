#!/usr/bin/env node
'use strict';
// Builds build/futoin_polyglot.node with cmake from this tree, against the
// headers of the Node that runs this script (nothing is downloaded).
//   node scripts/build.js [--debug] [--werror] [--sanitize]
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const here = path.resolve(__dirname, '..');
const args = process.argv.slice(2);
const build = path.join(here, 'build', 'cmake');

function findHeaders() {
    const candidates = [
        process.env.FUTOIN_NODE_INCLUDE,
        path.join(path.dirname(process.execPath), '..', 'include', 'node'),
        process.env.npm_config_nodedir && path.join(process.env.npm_config_nodedir, 'include', 'node'),
    ];
    try {
        candidates.push(path.join(path.dirname(require.resolve('node-api-headers/package.json')), 'include'));
    } catch (e) {
        // optional
    }
    for (const c of candidates) {
        if (c && fs.existsSync(path.join(c, 'node_api.h')) && fs.existsSync(path.join(c, 'uv.h'))) {
            return path.resolve(c);
        }
    }
    return null;
}

function run(cmd, argv) {
    const r = spawnSync(cmd, argv, { stdio: 'inherit' });
    if (r.error) {
        console.error(`futoin-polyglot: cannot run ${cmd}: ${r.error.message}`);
        process.exit(1);
    }
    if (r.status !== 0) {
        process.exit(r.status || 1);
    }
}

const inc = findHeaders();
if (!inc) {
    console.error('futoin-polyglot: node_api.h and uv.h not found next to this Node ' +
        `(${process.execPath}); set FUTOIN_NODE_INCLUDE to the directory holding them`);
    process.exit(1);
}
const type = args.includes('--debug') ? 'Debug' : 'Release';
const conf = ['-S', here, '-B', build, `-DNODE_INCLUDE_DIR=${inc}`, `-DCMAKE_BUILD_TYPE=${type}`];
if (args.includes('--werror') || process.env.FUTOIN_WERROR === '1') conf.push('-DFUTOIN_WERROR=ON');
if (args.includes('--sanitize')) conf.push('-DCMAKE_C_FLAGS=-fsanitize=address,undefined -fno-omit-frame-pointer');
run('cmake', conf);
run('cmake', ['--build', build, '--parallel']);
const out = path.join(build, 'futoin_polyglot.node');
fs.copyFileSync(out, path.join(here, 'build', 'futoin_polyglot.node'));
