-- Webhooks (SPEC §6): the webhooks of an organization and their outbox of deliveries.
-- 0003 created first drafts of these two tables that no code ever wrote to; they are replaced by
-- the tables the webhook module uses (leases for the delivery claim, attempt log, health state).
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;

CREATE TABLE webhooks (
  id              TEXT PRIMARY KEY,                     -- wh_…
  org_id          TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  url             TEXT NOT NULL,                        -- normalized http(s) URL
  events          TEXT NOT NULL,                        -- JSON array of event types
  ledger_ids      TEXT,                                 -- JSON array, or NULL = every ledger
  token           TEXT,                                 -- sent as X-Ledger-Token (needed in clear)
  secret          TEXT NOT NULL,                        -- HMAC key (needed in clear to sign)
  enabled         INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  disabled_reason TEXT,
  disabled_at     INTEGER,
  failing_since   INTEGER,                              -- first failed attempt since the last success
  last_success_at INTEGER,
  created_by      TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX webhooks_by_org ON webhooks (org_id, created_at, id);

-- One row per (event, webhook), written in the transaction of the change it announces. The body is
-- fixed when the row is written, so every attempt sends the same bytes under the same delivery id.
-- A row is claimed with a lease (lease_until, lease_token grows on every claim: fencing), so two
-- workers never send it at once and a crashed worker's claim expires (RELIABILITY.md D4).
CREATE TABLE webhook_deliveries (
  seq             INTEGER PRIMARY KEY,
  id              TEXT NOT NULL UNIQUE,                 -- dlv_… (X-Ledger-Delivery)
  webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id        TEXT NOT NULL,                        -- evt_… (the payload's id)
  type            TEXT NOT NULL,
  payload         TEXT NOT NULL,                        -- the JSON body, exactly as sent
  status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  max_attempts    INTEGER NOT NULL,
  next_at         INTEGER NOT NULL,
  lease_until     INTEGER,
  lease_token     INTEGER NOT NULL DEFAULT 0,
  last_attempt_at INTEGER,
  last_status     INTEGER,                              -- HTTP status of the last answer
  last_error      TEXT,
  attempt_log     TEXT NOT NULL DEFAULT '[]',           -- JSON [{at, status, error, ms}]
  created_at      INTEGER NOT NULL,
  finished_at     INTEGER                               -- delivered or failed
) STRICT;
-- Due deliveries are looked up per webhook (so held deliveries of a disabled webhook and the backlog
-- of a busy one are never walked); pings have their own index, as they go out to disabled webhooks too.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook_id, next_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_pings ON webhook_deliveries (webhook_id, next_at) WHERE status = 'pending' AND type = 'ping';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending';
