-- Change tracking (SPEC §5) and webhooks (SPEC §6).

-- The people store: the latest known state of each person, installation-wide. Matching keys:
-- the LinkedIn slug (authoritative), the e-mail, or the normalized name + company.
CREATE TABLE people (
  seq               INTEGER PRIMARY KEY,                -- internal: contacts.person_id holds it as text
  external_id       TEXT,                               -- the feed's personId
  linkedin_slug     TEXT,
  email             TEXT COLLATE NOCASE,
  email_status      TEXT,
  name              TEXT NOT NULL,
  name_key          TEXT NOT NULL,
  company           TEXT NOT NULL,
  company_key       TEXT NOT NULL,
  title             TEXT,
  location          TEXT,
  job_started_at    INTEGER,
  has_multiple_jobs INTEGER CHECK (has_multiple_jobs IN (0, 1)),
  observed_at       INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL
) STRICT;
-- Partial indexes: people without the key are not in the index at all (cheaper inserts).
CREATE UNIQUE INDEX people_by_external ON people (external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX people_by_slug ON people (linkedin_slug) WHERE linkedin_slug IS NOT NULL;
CREATE INDEX people_by_email ON people (email) WHERE email IS NOT NULL;
CREATE INDEX people_by_name_company ON people (name_key, company_key);

-- Contacts remember their matching keys and the person they were matched to.
ALTER TABLE contacts ADD COLUMN name_key TEXT;
ALTER TABLE contacts ADD COLUMN company_key TEXT;
CREATE INDEX contacts_by_person ON contacts (person_id) WHERE person_id IS NOT NULL;
-- only contacts that can be matched by name + company alone: unmatched, without LinkedIn and e-mail
CREATE INDEX contacts_by_name_company ON contacts (name_key, company_key) WHERE person_id IS NULL AND linkedin IS NULL AND email IS NULL;

-- Change history: one row per job change, one row per changed field for info changes.
CREATE TABLE changes (
  seq         INTEGER PRIMARY KEY,
  id          TEXT NOT NULL UNIQUE,                     -- chg_…
  ledger_id   TEXT NOT NULL REFERENCES ledgers (id) ON DELETE CASCADE,
  contact_id  TEXT NOT NULL,
  type        TEXT NOT NULL CHECK (type IN ('job', 'info')),
  field       TEXT,                                     -- info changes: the field
  from_value  TEXT NOT NULL,                            -- JSON
  to_value    TEXT NOT NULL,                            -- JSON
  detected_at INTEGER NOT NULL,
  observed_at INTEGER
) STRICT;
CREATE INDEX changes_by_contact ON changes (contact_id, seq);
CREATE INDEX changes_by_ledger ON changes (ledger_id, seq);
CREATE INDEX changes_by_ledger_time ON changes (ledger_id, detected_at);

-- Feed jobs (POST /feed, CLI, inbox); their status lives in `jobs`.
CREATE TABLE feed_jobs (
  id               TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,   -- feed_…
  source           TEXT NOT NULL CHECK (source IN ('api', 'cli', 'inbox')),
  file_name        TEXT,
  file_path        TEXT,
  format           TEXT NOT NULL CHECK (format IN ('ndjson', 'csv', 'json')),
  gzip             INTEGER NOT NULL DEFAULT 0,
  received         INTEGER NOT NULL DEFAULT 0,
  invalid          INTEGER NOT NULL DEFAULT 0,
  stale            INTEGER NOT NULL DEFAULT 0,
  persons_updated  INTEGER NOT NULL DEFAULT 0,
  contacts_matched INTEGER NOT NULL DEFAULT 0,
  job_changes      INTEGER NOT NULL DEFAULT 0,
  info_changes     INTEGER NOT NULL DEFAULT 0,
  cursor_records   INTEGER NOT NULL DEFAULT 0,          -- input records fully applied
  message          TEXT,
  created_by       TEXT,
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER
) STRICT;
CREATE INDEX feed_jobs_by_created ON feed_jobs (created_at, id);

CREATE TABLE feed_rejections (
  feed_id   TEXT NOT NULL REFERENCES feed_jobs (id) ON DELETE CASCADE,
  record_no INTEGER NOT NULL,
  line      INTEGER,
  reason    TEXT NOT NULL,
  PRIMARY KEY (feed_id, record_no)
) STRICT, WITHOUT ROWID;

-- Webhooks of an organization and their outbox of deliveries (written with the change).
CREATE TABLE webhooks (
  id              TEXT PRIMARY KEY,                     -- wh_…
  org_id          TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  url             TEXT NOT NULL,
  events          TEXT NOT NULL,                        -- JSON array
  ledger_ids      TEXT,                                 -- JSON array or NULL = all ledgers
  token           TEXT,
  secret          TEXT NOT NULL,                        -- HMAC key (needed in clear to sign)
  enabled         INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  disabled_reason TEXT,
  failing_since   INTEGER,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX webhooks_by_org ON webhooks (org_id, created_at, id);

CREATE TABLE webhook_deliveries (
  seq           INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,                   -- dlv_…
  webhook_id    TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id      TEXT NOT NULL,                          -- evt_… (the payload's id)
  type          TEXT NOT NULL,
  payload       TEXT NOT NULL,                          -- the JSON body, exactly as sent
  status        TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts      INTEGER NOT NULL DEFAULT 0,
  next_at       INTEGER NOT NULL,
  last_status   INTEGER,
  last_error    TEXT,
  created_at    INTEGER NOT NULL,
  delivered_at  INTEGER
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, seq);

-- Daily change sets written by the scheduler: one row per (ledger, day) once written.
CREATE TABLE daily_change_sets (
  ledger_id  TEXT NOT NULL REFERENCES ledgers (id) ON DELETE CASCADE,
  day        TEXT NOT NULL,                             -- YYYYMMDD (UTC)
  files      TEXT NOT NULL,                             -- JSON [{name, bytes, contacts}]
  created_at INTEGER NOT NULL,
  PRIMARY KEY (ledger_id, day)
) STRICT, WITHOUT ROWID;
