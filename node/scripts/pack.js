#!/usr/bin/env node
'use strict';
// prepack: copy the C core and the FTN12 headers into the package, so a
// packed tarball builds on its own; postpack: remove the copies again.
//   node scripts/pack.js pre|post
const fs = require('fs');
const path = require('path');

const here = path.resolve(__dirname, '..');
const dirs = ['core', 'abi'];

if (process.argv[2] === 'pre') {
    for (const d of dirs) {
        fs.cpSync(path.join(here, '..', d), path.join(here, d), { recursive: true });
    }
} else if (process.argv[2] === 'post') {
    for (const d of dirs) {
        fs.rmSync(path.join(here, d), { recursive: true, force: true });
    }
} else {
    console.error('usage: node scripts/pack.js pre|post');
    process.exit(2);
}
