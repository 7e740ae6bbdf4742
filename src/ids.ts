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
  return `${prefix}_${base32(POOL, start)}`;
}

/**
 * 16 bytes (128 bits) from `start` as 26 base32 digits of ALPHABET (the last digit carries 3
 * bits). An indexed loop over the pool, no view of it: newId runs once per imported row.
 */
export function base32(bytes: Uint8Array, start = 0): string {
  let out = '';
  let acc = 0;
  let bits = 0;
  for (let i = start; i < start + 16; i++) {
    acc = ((acc << 8) | bytes[i]!) & 0xfff; // the bits not yet written are fewer than 13
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(acc << (5 - bits)) & 31];
  return out;
}

/** The 16 bytes base32 wrote as these 26 digits; undefined for any other text (the one spelling base32 gives). */
export function fromBase32(text: string): Buffer | undefined {
  if (!/^[0-9a-z]{26}$/.test(text)) return undefined;
  const out = Buffer.alloc(16);
  let acc = 0;
  let bits = 0;
  let n = 0;
  for (const ch of text) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) return undefined;
    acc = ((acc << 5) | v) & 0xfff;
    bits += 5;
    if (bits >= 8 && n < 16) {
      out[n++] = (acc >>> (bits - 8)) & 0xff;
      bits -= 8;
    }
  }
  return base32(out) === text ? out : undefined;
}

/** True when `id` looks like an id of the given type (cheap shape check before a lookup). */
export function isId(prefix: IdPrefix, id: string): boolean {
  return id.length === prefix.length + 27 && id.startsWith(`${prefix}_`) && /^[0-9a-z]+$/.test(id.slice(prefix.length + 1));
}
