/**
 * A turn of the event loop: what waits on it (other requests, a signal's listener) runs before the
 * code after the await does — between the steps of a long read, or before a look at whether SIGINT
 * arrived during synchronous work.
 */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
