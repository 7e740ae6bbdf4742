/**
 * Strict UTF-8 (RFC 3629), for input that must not be altered: Buffer#toString and a default
 * TextDecoder put U+FFFD in place of bytes that are not UTF-8, silently. A fatal TextDecoder costs
 * what the lossy decoding costs (measured: docs/decisions.md, "Request bodies are UTF-8, or 400").
 */

const fatal = new TextDecoder('utf-8', { fatal: true }); // drops a leading byte order mark
const fatalKeepBom = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as text, or undefined when they are not valid UTF-8. A leading BOM is dropped unless `keepBom`. */
export function utf8OrUndefined(bytes: Uint8Array, keepBom = false): string | undefined {
  try {
    return (keepBom ? fatalKeepBom : fatal).decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * UTF-8 checked a byte at a time (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF), for scanners that look at every byte anyway (src/csv/scan.ts, src/csv/record-limit.ts)
 * and for invalidUtf8At below. ASCII outside a sequence needs no look: give `take` the bytes for
 * which `wants` is true.
 */
export class Utf8Check {
  /** Continuation bytes still expected; > 0 at the end of the input means a cut-off sequence. */
  need = 0;
  /** The range of the next continuation byte (narrower after E0, ED, F0, F4). */
  private lo = 0x80;
  private hi = 0xbf;

  wants(b: number): boolean {
    return b >= 0x80 || this.need > 0;
  }

  /**
   * Takes the next byte. False when the bytes are not UTF-8 here: a byte that cannot start a
   * sequence (taken, the check starts over after it), or a sequence cut off by `b` — then `b` was
   * not taken: the check starts over and the caller gives it again if `wants` it.
   */
  take(b: number): boolean {
    if (this.need > 0) {
      const fits = b >= this.lo && b <= this.hi;
      this.need = fits ? this.need - 1 : 0;
      this.lo = 0x80;
      this.hi = 0xbf;
      return fits;
    }
    if (b < 0x80) return true;
    if (b >= 0xc2 && b <= 0xdf) this.need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      this.need = 2;
      if (b === 0xe0) this.lo = 0xa0;
      else if (b === 0xed) this.hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      this.need = 3;
      if (b === 0xf0) this.lo = 0x90;
      else if (b === 0xf4) this.hi = 0x8f;
    } else return false;
    return true;
  }
}

/** Where `bytes` stop being UTF-8: the offset of the first byte of the bad sequence, or -1. */
export function invalidUtf8At(bytes: Uint8Array, from = 0, to = bytes.length): number {
  const check = new Utf8Check();
  let start = from;
  for (let i = from; i < to; i++) {
    const b = bytes[i]!;
    if (check.need === 0) start = i;
    if (!check.wants(b)) continue;
    if (!check.take(b)) return start;
  }
  return check.need > 0 ? start : -1;
}
