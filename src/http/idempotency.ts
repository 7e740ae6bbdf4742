import { z } from 'zod';
import type Koa from 'koa';
import type { HeaderSpec, ResponseSpec } from './route.ts';

/**
 * The `Idempotency-Key` request header of the routes that create jobs (imports, feeds) and their
 * answers (draft-ietf-httpapi-idempotency-key-header): 202 with a new job, or 200 with the job an
 * earlier request under the same key created, marked `Idempotent-Replayed: true`.
 */

/** 1–255 visible ASCII characters, optionally quoted as a structured-field string (`"key"`); the value is the key without quotes. */
export const IdempotencyKey = z
  .string()
  .regex(/^(?!""$)(?:"[\x21-\x7e]{1,255}"|[\x21-\x7e]{1,255})$/, 'must be 1 to 255 visible ASCII characters')
  .transform((k) => /^"(.*)"$/.exec(k)?.[1] ?? k);

/** The `Idempotent-Replayed` header of an answer that replays an earlier request. */
export const IdempotentReplayed = z.literal('true');

/** The header, documented with whose keys they are (`scope`: "per ledger", "the caller's own"). */
export function idempotencyKeyHeader(scope: string): Record<string, HeaderSpec> {
  return {
    'Idempotency-Key': {
      schema: IdempotencyKey,
      code: 'invalid_idempotency_key',
      description:
        `Makes a retry safe (draft-ietf-httpapi-idempotency-key-header): 1 to 255 visible ASCII characters, ${scope}. ` +
        'A retry of the same request answers 200 with the first job; another request under the same key → 422 idempotency_key_reused.',
    },
  };
}

/** The answers of a route that creates a job of the kind `what` ("import job", "feed job"), whose body `schema` gives. */
export function jobAnswers(what: string, schema: z.ZodType): Record<number, ResponseSpec> {
  const jobLocation = { Location: { description: `URL of the ${what}` } };
  return {
    202: { description: `${what[0]!.toUpperCase()}${what.slice(1)} (created)`, schema, headers: jobLocation },
    200: {
      description: `${what[0]!.toUpperCase()}${what.slice(1)} created by an earlier request with the same Idempotency-Key (a replay: nothing new was created)`,
      schema,
      headers: { ...jobLocation, 'Idempotent-Replayed': { description: 'Always "true": this answer replays the first request', schema: IdempotentReplayed } },
    },
  };
}

/** Answers with a created job (202) or, for a replay, the earlier one (200, Idempotent-Replayed). */
export function answerJob(ctx: Koa.Context, replayed: boolean, location: string, body: unknown): void {
  ctx.status = replayed ? 200 : 202;
  if (replayed) ctx.set('Idempotent-Replayed', 'true');
  ctx.set('Location', location);
  ctx.body = body;
}
