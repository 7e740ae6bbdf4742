import { randomFillSync } from 'node:crypto';

/** Type prefixes of public ids (SPEC §2). */
export type IdPrefix = 'o' | 'u' | 'sa' | 'l' | 'c' | 'imp' | 'feed' | 'wh' | 'chg' | 'sf' | 'evt' | 'dlv' | 'job' | 'p';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case: URL-safe, no look-alikes

// Random bytes are drawn from the CSPRNG 4 KiB at a time (one call per 256 ids instead of one per
// id: imports create ids by the million); every byte is used once, so each id still carries 128
// fresh random bits.
const POOL = Buffer.allocUnsafeSlow(4096);
let used = POOL.length;

/** A random, opaque, URL-safe id with a type prefix: 128 bits of randomness, never sequential. */
export function newId(prefix: IdPrefix): string {
  if (used + 16 > POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const start = used;
  used += 16;
  let out = `${prefix}_`;
  // 128 bits → 26 base32 digits (the last digit carries 3 bits)
  let acc = 0;
  let bits = 0;
  for (let i = start; i < start + 16; i++) {
    acc = (acc << 8) | POOL[i]!;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(acc << (5 - bits)) & 31];
  return out;
}

/** True when `id` looks like an id of the given type (cheap shape check before a lookup). */
export function isId(prefix: IdPrefix, id: string): boolean {
  return id.length === prefix.length + 27 && id.startsWith(`${prefix}_`) && /^[0-9a-z]+$/.test(id.slice(prefix.length + 1));
}
