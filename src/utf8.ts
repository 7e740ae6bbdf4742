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
 * Where `bytes` stop being UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF, no cut-off sequence): the offset of the first byte of the bad sequence, or -1.
 */
export function invalidUtf8At(bytes: Uint8Array, from = 0, to = bytes.length): number {
  for (let i = from; i < to; ) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      else if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      else if (b === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = i + k < to ? bytes[i + k]! : -1;
      if (c < lo || c > hi) return i;
      lo = 0x80;
      hi = 0xbf;
    }
    i += need + 1;
  }
  return -1;
}

