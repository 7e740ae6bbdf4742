/**
 * mulberry32: a small seeded pseudo-random generator (numbers in [0, 1)), for generated data that
 * must come out the same on every run and machine — benchmark files, property tests, the crash
 * harness's kill plan (a failing seed can be run again).
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
