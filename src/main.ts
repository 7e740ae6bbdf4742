#!/usr/bin/env node
// The program's entry point: the only module that touches process-wide state (argv, exit, signals
// are handled by the commands it dispatches to).
import { runCli } from './cli/index.ts';

process.on('unhandledRejection', (reason) => {
  process.stderr.write(`contact-ledger: unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}\n`);
  process.exit(1);
});

void runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  write: (text) => process.stderr.write(text),
  env: process.env,
  isTTY: Boolean(process.stderr.isTTY),
}).then((code) => {
  process.exitCode = code;
});
