import { errors as joseErrors, jwtVerify, SignJWT, type JWTHeaderParameters, type JWTPayload } from 'jose';
import type { Clock } from '../clock.ts';
import { unauthenticated } from '../errors.ts';
import { randomToken } from '../crypto.ts';
import { KID_PATTERN, type SigningKey } from './signing-keys.ts';

const ALG = 'HS256'; // the one algorithm we accept (RFC 8725 §3.1)
const TYP = 'at+jwt'; // RFC 9068: an access token, not some other JWT signed with the same key

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

/** Signs and verifies access tokens (JWT, jose). The only jwtVerify call site of the program. */
export function createAccessTokens(keys: SigningKey[], cfg: AccessTokenConfig, clock: Clock) {
  const byKid = new Map(keys.map((k) => [k.kid, k.secret]));
  const signing = keys[keys.length - 1]!;

  return {
    /** Issues a token for `sub` in session `sid`; returns it with its expiry (ms). */
    async sign(sub: string, sid: string): Promise<{ token: string; expiresAt: number }> {
      const nowMs = clock.now();
      const iat = Math.floor(nowMs / 1000);
      const expiresAt = nowMs + cfg.ttlSeconds * 1000;
      const token = await new SignJWT({ sid })
        .setProtectedHeader({ alg: ALG, typ: TYP, kid: signing.kid })
        .setIssuer(cfg.issuer)
        .setAudience(cfg.audience)
        .setSubject(sub)
        .setIssuedAt(iat)
        .setExpirationTime(Math.floor(expiresAt / 1000))
        .setJti(randomToken(12))
        .sign(signing.secret);
      return { token, expiresAt };
    },

    /** Verifies signature, algorithm, type, issuer, audience and lifetime; throws 401 otherwise. */
    async verify(token: string): Promise<AccessClaims> {
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
            clockTolerance: 30,
            currentDate: new Date(clock.now()),
          },
        ));
      } catch (err) {
        const expired = err instanceof joseErrors.JWTExpired;
        throw unauthenticated(expired ? 'The access token has expired; refresh it or sign in again.' : 'The access token is not valid.');
      }
      const { sub, sid, iat, exp } = payload as JWTPayload & { sid?: unknown };
      if (typeof sub !== 'string' || typeof sid !== 'string' || typeof iat !== 'number' || typeof exp !== 'number') {
        throw unauthenticated('The access token is not valid.');
      }
      return { sub, sid, iat, exp };
    },
  };
}
