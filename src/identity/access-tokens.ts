import { createSecretKey, hash, type KeyObject } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT, type JWTHeaderParameters, type JWTPayload } from 'jose';
import type { Clock } from '../clock.ts';
import { unauthenticated } from '../errors.ts';
import { randomToken } from '../crypto.ts';
import { CLOCK_TOLERANCE_S, KID_PATTERN, type SigningKey } from './signing-keys.ts';

const ALG = 'HS256'; // the one algorithm we accept (RFC 8725 §3.1)
const TYP = 'at+jwt'; // RFC 9068: an access token, not some other JWT signed with the same key
/** Verified tokens kept in memory; only tokens whose signature and claims passed are ever added. */
const VERIFIED_CACHE_MAX = 10_000;

export interface AccessClaims {
  sub: string;
  sid: string;
  iat: number;
  exp: number;
}

export interface AccessTokenConfig {
  issuer: string;
  audience: string;
  ttlSeconds: number;
}

export type AccessTokens = ReturnType<typeof createAccessTokens>;

/**
 * Signs and verifies access tokens (JWT, jose). The only jwtVerify call site of the program.
 *
 * A token that passed verification is remembered (keyed by its SHA-256, at most
 * VERIFIED_CACHE_MAX of them) until it expires, so a client repeating its token does not pay the
 * signature check on every request. Only what cannot change for a given token is skipped (its
 * signature, header, issuer, audience and type); its lifetime is checked against the clock on every
 * use exactly as jose checks it, and everything revocable (session, account, membership, role) is
 * read from the database by the caller on every request (SPEC §2).
 */
export function createAccessTokens(keys: SigningKey[], cfg: AccessTokenConfig, clock: Clock) {
  // KeyObjects, not raw bytes: jose turns a KeyObject into a CryptoKey once and caches it, where a
  // Uint8Array would be imported again on every verification.
  const byKid = new Map<string, KeyObject>(keys.map((k) => [k.kid, createSecretKey(k.secret)]));
  const signing = keys[keys.length - 1]!;
  const signingKey = byKid.get(signing.kid)!;
  const verified = new Map<string, AccessClaims & { nbf: number | undefined; until: number }>();

  /** The verified claims of a token seen before, while its time claims still hold (jose's rules). */
  function remembered(key: string): AccessClaims | undefined {
    const c = verified.get(key);
    if (!c) return undefined;
    const now = Math.floor(clock.now() / 1000);
    if (c.until <= now - CLOCK_TOLERANCE_S || (c.nbf !== undefined && c.nbf > now + CLOCK_TOLERANCE_S)) {
      verified.delete(key); // jose decides (and explains) from here on
      return undefined;
    }
    return c;
  }

  /** `until`: when jose would refuse the token (its exp, or iat plus the longest lifetime, maxTokenAge). */
  function remember(key: string, claims: AccessClaims, nbf: number | undefined, until: number): void {
    if (verified.size >= VERIFIED_CACHE_MAX) {
      const now = Math.floor(clock.now() / 1000);
      for (const [k, c] of verified) if (c.until <= now - CLOCK_TOLERANCE_S) verified.delete(k);
      // still full of live tokens: forget the oldest (Map iterates in insertion order)
      if (verified.size >= VERIFIED_CACHE_MAX) verified.delete(verified.keys().next().value!);
    }
    verified.set(key, { ...claims, nbf, until });
  }

  return {
    /** Issues a token for `sub` in session `sid`; returns it with its expiry (ms). */
    /**
     * A signed access token for the session `sid`, living `ttlSeconds` — or less, up to `notAfter`
     * (the session's own end, after which every request with it is refused).
     */
    async sign(sub: string, sid: string, notAfter = Infinity): Promise<{ token: string; expiresAt: number; expiresIn: number }> {
      const nowMs = clock.now();
      const iat = Math.floor(nowMs / 1000);
      // whole seconds, as the JWT's exp says it (GET /session reads it back from there), unless the
      // session ends before: then that moment, after which every request with the token is refused
      const expiresAt = Math.min(Math.ceil((nowMs + cfg.ttlSeconds * 1000) / 1000) * 1000, notAfter);
      const token = await new SignJWT({ sid })
        .setProtectedHeader({ alg: ALG, typ: TYP, kid: signing.kid })
        .setIssuer(cfg.issuer)
        .setAudience(cfg.audience)
        .setSubject(sub)
        .setIssuedAt(iat)
        // whole seconds (JWT exp), rounded up from a session's end: the token is valid until the expiresAt the answer gives
        .setExpirationTime(Math.ceil(expiresAt / 1000))
        .setJti(randomToken(12))
        .sign(signingKey);
      return { token, expiresAt, expiresIn: Math.floor((expiresAt - nowMs) / 1000) };
    },

    /** Verifies signature, algorithm, type, issuer, audience and lifetime; throws 401 otherwise. */
    async verify(token: string): Promise<AccessClaims> {
      // a digest as the key: lookups never compare token bytes with those of other tokens
      const key = hash('sha256', token, 'base64');
      const known = remembered(key);
      if (known) return { sub: known.sub, sid: known.sid, iat: known.iat, exp: known.exp };
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(
          token,
          (header: JWTHeaderParameters) => {
            // Keys come only from our own file: reject headers that point elsewhere (RFC 8725 §3.10).
            if ('jku' in header || 'x5u' in header || 'jwk' in header || 'x5c' in header) throw new Error('key reference headers are not accepted');
            const kid = header.kid;
            const key = typeof kid === 'string' && KID_PATTERN.test(kid) ? byKid.get(kid) : undefined;
            if (!key) throw new Error('unknown key id');
            return key;
          },
          {
            algorithms: [ALG],
            typ: TYP,
            issuer: cfg.issuer,
            audience: cfg.audience,
            requiredClaims: ['exp', 'iat', 'sub', 'sid'],
            clockTolerance: CLOCK_TOLERANCE_S,
            // no token outlives the lifetime this server gives (a reviewer's case: an iat in the
            // future and an exp decades away were accepted; only a holder of the key can make
            // either, but nothing we sign looks so)
            maxTokenAge: cfg.ttlSeconds + 1,
            currentDate: new Date(clock.now()),
          },
        ));
      } catch (err) {
        const expired = err instanceof joseErrors.JWTExpired;
        throw unauthenticated(expired ? 'The access token has expired; refresh it or sign in again.' : 'The access token is not valid.');
      }
      const { sub, sid, iat, exp, nbf } = payload as JWTPayload & { sid?: unknown };
      if (typeof sub !== 'string' || typeof sid !== 'string' || typeof iat !== 'number' || typeof exp !== 'number') {
        throw unauthenticated('The access token is not valid.');
      }
      remember(key, { sub, sid, iat, exp }, nbf, Math.min(exp, iat + cfg.ttlSeconds + 1));
      return { sub, sid, iat, exp };
    },
  };
}
