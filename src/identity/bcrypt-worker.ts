// Runs bcrypt off the main thread: bcryptjs's async mode still blocks the event loop for up to
// 100 ms at a time (cost 12 is ~225 ms of CPU), which would stall every other request.
import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

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
