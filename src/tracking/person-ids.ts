import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';
import { base32, fromBase32 } from '../ids.ts';

/**
 * The public id of a stored person (`p_` and 26 base32 digits, as every id of SPEC §2), made from
 * their seq — the people table's own key, which contacts refer to — by a keyed permutation: one
 * AES-256 block of 8 zero bytes and the seq, under a key derived from a secret of the installation
 * (kept in the database, so a restored backup answers the same ids). The ids are opaque and not sequential, and one that
 * was altered or made up decrypts to no seq; the store needs no column or index for them. Until
 * the forty-first session the API showed the seq itself ("1", "2", … "4021": how many people an
 * installation holds, and the next one's id; a tester's case against SPEC §2).
 */
export function createPersonIds(secret: Buffer) {
  const key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'contact-ledger person id', 32));
  const block = (decrypt: boolean, data: Buffer): Buffer => {
    const c = decrypt ? createDecipheriv('aes-256-ecb', key, null) : createCipheriv('aes-256-ecb', key, null);
    c.setAutoPadding(false);
    return Buffer.concat([c.update(data), c.final()]);
  };
  return {
    encode(seq: number): string {
      const plain = Buffer.alloc(16);
      plain.writeBigUInt64BE(BigInt(seq), 8);
      return `p_${base32(block(false, plain))}`;
    },
    /** The seq of an id `encode` gave; undefined for any other text. */
    decode(id: string): number | undefined {
      const sealed = id.startsWith('p_') ? fromBase32(id.slice(2)) : undefined;
      if (!sealed) return undefined;
      const plain = block(true, sealed);
      if (plain.readBigUInt64BE(0) !== 0n) return undefined;
      const seq = plain.readBigUInt64BE(8);
      return seq >= 1n && seq <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(seq) : undefined;
    },
  };
}

export type PersonIds = ReturnType<typeof createPersonIds>;
