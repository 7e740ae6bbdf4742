// Runs bcrypt off the main thread: bcryptjs's async mode still blocks the event loop for up to
// 100 ms at a time (cost 12 is ~225 ms of CPU), which would stall every other request.
import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';
import { NICE, setThreadNice } from '../thread-priority.ts';

// This thread runs at the lowest priority (nice 19): when the server has a core to itself, or a
// burst of sign-ins meets a busy server (RELIABILITY.md L1 scenario 4, a login storm), hashing
// takes the CPU that requests leave over instead of half of it, and sign-ins wait (the queue is
// bounded; beyond it they get 429) while every other request keeps its speed. Linux keeps a nice
// value per thread; /proc/thread-self names this one. Elsewhere the OS shares the CPU evenly.
setThreadNice(NICE.passwordHashing);

interface Job {
  id: number;
  op: 'hash' | 'compare';
  input: string;
  costOrHash: number | string;
}

parentPort!.on('message', (job: Job) => {
  try {
    const result = job.op === 'hash' ? bcrypt.hashSync(job.input, job.costOrHash as number) : bcrypt.compareSync(job.input, job.costOrHash as string);
    parentPort!.postMessage({ id: job.id, result });
  } catch (err) {
    parentPort!.postMessage({ id: job.id, error: (err as Error).message });
  }
});
