import { createHmac } from 'node:crypto';
import { randomToken } from '../crypto.ts';

/** Prefix of signing secrets, so that secret scanners can recognise a leaked one. */
const SECRET_PREFIX = 'whsec_';

/** A new signing secret: 256 bits from the CSPRNG. */
export const newSigningSecret = (): string => SECRET_PREFIX + randomToken(32);

/**
 * The X-Ledger-Signature header (SPEC §6): `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`,
 * the key being the whole secret string as UTF-8. The time is part of what is signed, so a
 * receiver that checks it can refuse replays of old deliveries.
 */
export function signatureHeader(secret: string, unixSeconds: number, body: Buffer): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.`).update(body).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}
