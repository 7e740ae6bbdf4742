#!/usr/bin/env node
// The program's entry point: the only module that touches process-wide state (argv, exit; signals
// are handled by the commands it dispatches to, but for SIGUSR1, below).
import { runCli } from './cli/index.ts';

// SIGUSR1 would open Node's debugger on 127.0.0.1:9229, and any user of the machine could run code
// there as this process: read the signing keys, forge a superuser's token (an operator tester's
// case: `kill -USR1`, as nginx reopens its logs). A listener of our own keeps it shut, in the
// executable as from source; the signal does nothing else.
process.on('SIGUSR1', () => {});

process.on('unhandledRejection', (reason) => {
  process.stderr.write(`contact-ledger: unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}\n`);
  process.exit(1);
});

// A reader that stops early (`contact-ledger licenses | head`) closes the pipe: the rest of the
// output goes nowhere and the command ends as it would have, without a stack trace of EPIPE. Output
// that cannot be written (a full disk: `version > /dev/full`) is said in one line, exit 1: it was a
// stack trace (an operator tester's case).
let stdoutClosed = false;
let outputLost = false;
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  stdoutClosed = true;
  if (err.code === 'EPIPE') return;
  if (!outputLost) process.stderr.write(`contact-ledger: cannot write its output: ${err.code ? `${err.code}: ` : ''}${err.message.replace(/^\w+: /, '')}\n`);
  outputLost = true;
  if (!process.exitCode) process.exitCode = 1; // the error may come after the command ended (below)
});

void runCli(process.argv.slice(2), {
  out: (line) => {
    if (!stdoutClosed) process.stdout.write(`${line}\n`);
  },
  err: (line) => process.stderr.write(`${line}\n`),
  write: (text) => process.stderr.write(text),
  env: process.env,
  isTTY: Boolean(process.stderr.isTTY),
}).then((code) => {
  process.exitCode = outputLost && code === 0 ? 1 : code;
});
