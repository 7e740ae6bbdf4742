// Preloaded into the packaging step by scripts/build.ts (node --require), beside offline-guard.cjs.
// pkg (SEA mode) writes the blob's inputs into a fresh fs.promises.mkdtemp(<tmp>/pkg-sea-) folder,
// and Node records the path of the main script there (<tmp>/pkg-sea-XXXXXX/sea-main.js) in the
// blob it embeds: six random letters, and the machine's TMPDIR, that made two builds of the same
// commit differ. This gives pkg the folder scripts/build.ts claimed instead (CONTACT_LEDGER_SEA_DIR,
// a fixed path); pkg works in it and removes it when done, as it does its own.
'use strict';
const fsp = require('fs/promises');
const { basename } = require('path');

const fixed = process.env.CONTACT_LEDGER_SEA_DIR;
if (!fixed) throw new Error('pkg-fixed-sea-dir.cjs: CONTACT_LEDGER_SEA_DIR is not set (scripts/build.ts sets it)');
const mkdtemp = fsp.mkdtemp;
fsp.mkdtemp = async function mkdtempFixedForSea(prefix, options) {
  if (typeof prefix === 'string' && basename(prefix) === 'pkg-sea-') return fixed;
  return mkdtemp.call(this, prefix, options);
};
