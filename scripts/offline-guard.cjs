// Preloaded into the packaging step by scripts/build.ts (node --require): the build must not reach
// the network, so any attempt fails the build loudly instead of quietly downloading something.
'use strict';
const deny = (what) => () => {
  throw new Error(`offline build: ${what} attempted a network connection; the build must use only what npm ci installed`);
};
globalThis.fetch = async (input) => deny(`fetch(${typeof input === 'string' ? input : (input && input.url) || ''})`)();
for (const mod of ['http', 'https']) {
  const m = require(mod);
  m.request = deny(`${mod}.request`);
  m.get = deny(`${mod}.get`);
}
const net = require('net');
net.connect = deny('net.connect');
net.createConnection = deny('net.createConnection');
require('tls').connect = deny('tls.connect');
