-- Ledger service (SPEC §4) and the job queue of the scheduler (SPEC §7).

-- Organizations being deleted are hidden at once and purged in the background (big ledgers
-- cannot be deleted in one short transaction).
ALTER TABLE orgs ADD COLUMN deleted_at INTEGER;

CREATE TABLE ledgers (
  id            TEXT PRIMARY KEY,                       -- l_…
  org_id        TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  description   TEXT NOT NULL DEFAULT '',
  contact_count INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  deleted_at    INTEGER                                 -- set: hidden, being purged
) STRICT;
CREATE INDEX ledgers_by_org ON ledgers (org_id, created_at, id);

-- Contacts. `seq` (the rowid) is internal: it orders rows created in the same millisecond and
-- makes every secondary index append-friendly; the public id is the random `id`.
CREATE TABLE contacts (
  seq                  INTEGER PRIMARY KEY,
  id                   TEXT NOT NULL UNIQUE,            -- c_…
  ledger_id            TEXT NOT NULL REFERENCES ledgers (id) ON DELETE CASCADE,
  import_id            TEXT,
  reference_id         TEXT,
  name                 TEXT NOT NULL,
  company              TEXT NOT NULL,
  import_company       TEXT NOT NULL,
  import_title         TEXT,
  title                TEXT,
  title_level          TEXT,
  title_domain         TEXT,
  location             TEXT,
  email                TEXT COLLATE NOCASE,
  email_status         TEXT,
  linkedin             TEXT,                            -- canonical https://www.linkedin.com/in/<slug>
  has_multiple_jobs    INTEGER CHECK (has_multiple_jobs IN (0, 1)),
  is_verified          INTEGER NOT NULL DEFAULT 0 CHECK (is_verified IN (0, 1)),
  person_id            TEXT,
  job_started_at       INTEGER,
  last_job_changed_at  INTEGER,
  last_info_changed_at INTEGER,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL
) STRICT;
CREATE INDEX contacts_by_created ON contacts (ledger_id, created_at);
CREATE UNIQUE INDEX contacts_by_reference ON contacts (ledger_id, reference_id) WHERE reference_id IS NOT NULL;
CREATE INDEX contacts_by_name ON contacts (ledger_id, name COLLATE NOCASE);
CREATE INDEX contacts_by_job_change ON contacts (ledger_id, last_job_changed_at);
CREATE INDEX contacts_by_info_change ON contacts (ledger_id, last_info_changed_at);
CREATE INDEX contacts_by_linkedin ON contacts (linkedin) WHERE linkedin IS NOT NULL;
CREATE INDEX contacts_by_email ON contacts (email) WHERE email IS NOT NULL;
CREATE INDEX contacts_by_import ON contacts (import_id) WHERE import_id IS NOT NULL;

-- The scheduler's queue: one row per unit of background work, claimed with a lease.
-- lease_token grows on every claim and fences off a worker whose lease expired (RELIABILITY.md D4);
-- attempts counts claims since the job last made progress.
CREATE TABLE jobs (
  id           TEXT PRIMARY KEY,                        -- the id of the domain row (imp_…, feed_…)
  kind         TEXT NOT NULL,
  payload      TEXT,                                    -- JSON for kinds without a table of their own
  status       TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
  run_after    INTEGER NOT NULL,
  attempts     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 5,
  lease_owner  TEXT,
  lease_until  INTEGER,
  lease_token  INTEGER NOT NULL DEFAULT 0,
  last_error   TEXT,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX jobs_runnable ON jobs (status, run_after) WHERE status IN ('pending', 'processing');

CREATE TABLE import_jobs (
  id            TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,  -- imp_…
  ledger_id     TEXT NOT NULL REFERENCES ledgers (id) ON DELETE CASCADE,
  source        TEXT NOT NULL CHECK (source IN ('api', 'csv')),
  file_name     TEXT,
  file_path     TEXT,                                   -- the stored upload while the job runs
  format        TEXT,                                   -- JSON: delimiter, header, mapping
  submitted     INTEGER NOT NULL DEFAULT 0,
  imported      INTEGER NOT NULL DEFAULT 0,
  duplicates    INTEGER NOT NULL DEFAULT 0,
  invalid       INTEGER NOT NULL DEFAULT 0,
  matched       INTEGER NOT NULL DEFAULT 0,
  job_changes   INTEGER NOT NULL DEFAULT 0,
  cursor_rows   INTEGER NOT NULL DEFAULT 0,             -- input rows fully processed
  cursor_bytes  INTEGER NOT NULL DEFAULT 0,             -- CSV: byte offset after the last processed row
  cursor_lines  INTEGER NOT NULL DEFAULT 0,             -- CSV: line number of that row's end
  message       TEXT,
  created_by    TEXT,
  created_at    INTEGER NOT NULL,
  started_at    INTEGER,
  finished_at   INTEGER
) STRICT;
CREATE INDEX import_jobs_by_ledger ON import_jobs (ledger_id, created_at, id);

-- API batches wait here until their job has processed them.
CREATE TABLE import_payloads (
  import_id TEXT PRIMARY KEY REFERENCES import_jobs (id) ON DELETE CASCADE,
  body      TEXT NOT NULL                               -- JSON array of the submitted contacts
) STRICT, WITHOUT ROWID;

-- Rejected rows, written in the same transaction as the rows around them.
CREATE TABLE import_rejections (
  import_id TEXT NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
  row_no    INTEGER NOT NULL,                           -- 1-based data row
  line      INTEGER,                                    -- CSV line where the row starts
  reason    TEXT NOT NULL,
  kind      TEXT NOT NULL CHECK (kind IN ('invalid', 'duplicate')),
  raw       TEXT NOT NULL,                              -- JSON: the row as submitted
  PRIMARY KEY (import_id, row_no)
) STRICT, WITHOUT ROWID;
