import type { ApiRouter } from '../http/route.ts';
import type { Runtime } from '../runtime.ts';

export const LEDGER_PREFIX = '/api/ledger/v1';

/** Registers the ledger service (SPEC §4). */
export function registerLedgerRoutes(_r: ApiRouter, _rt: Runtime): void {}
