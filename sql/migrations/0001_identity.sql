-- Identity service (SPEC §3). Times are INTEGER milliseconds since the epoch (UTC).

-- Installation-wide settings generated on first start (e.g. the password pre-hash key).
CREATE TABLE settings (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE users (
  id            TEXT PRIMARY KEY,                       -- u_…
  email         TEXT NOT NULL UNIQUE,                   -- lower-cased
  name          TEXT NOT NULL DEFAULT '',
  password_hash TEXT NOT NULL,                          -- bcrypt(base64(HMAC-SHA384(key, password)))
  superuser     INTEGER NOT NULL DEFAULT 0 CHECK (superuser IN (0, 1)),
  disabled      INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX users_by_created ON users (created_at, id);

CREATE TABLE orgs (
  id         TEXT PRIMARY KEY,                          -- o_…
  name       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX orgs_by_created ON orgs (created_at, id);

CREATE TABLE members (
  org_id   TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  user_id  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role     TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
  added_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, user_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX members_by_user ON members (user_id);
CREATE INDEX members_by_org_added ON members (org_id, added_at, user_id);

-- Organization service accounts have org_id + role; installation ones have neither, only permissions.
CREATE TABLE service_accounts (
  id           TEXT PRIMARY KEY,                        -- sa_… (= clientId)
  org_id       TEXT REFERENCES orgs (id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  role         TEXT CHECK (role IN ('viewer', 'editor', 'admin')),
  permissions  TEXT NOT NULL DEFAULT '[]',              -- JSON array, e.g. ["feed"]
  secret_hash  BLOB NOT NULL,                           -- SHA-256 of the 256-bit secret
  created_by   TEXT,
  created_at   INTEGER NOT NULL,
  rotated_at   INTEGER,
  last_used_at INTEGER,
  CHECK ((org_id IS NULL) = (role IS NULL))
) STRICT;
CREATE INDEX service_accounts_by_org ON service_accounts (org_id, created_at, id);

-- A session is one sign-in: the family of refresh tokens that descends from it. Access tokens
-- carry its id (`sid`), so revoking the session ends them on their next request.
CREATE TABLE sessions (
  id                 TEXT PRIMARY KEY,
  user_id            TEXT REFERENCES users (id) ON DELETE CASCADE,
  service_account_id TEXT REFERENCES service_accounts (id) ON DELETE CASCADE,
  created_at         INTEGER NOT NULL,
  last_used_at       INTEGER NOT NULL,
  expires_at         INTEGER NOT NULL,                  -- absolute end of the sign-in
  revoked_at         INTEGER,
  revoked_reason     TEXT,
  CHECK ((user_id IS NULL) <> (service_account_id IS NULL))
) STRICT;
CREATE INDEX sessions_by_user ON sessions (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX sessions_by_service_account ON sessions (service_account_id) WHERE service_account_id IS NOT NULL;

-- Refresh tokens are stored only as SHA-256 digests; a used token stays (used_at set) so that its
-- re-use is recognised and revokes the whole session.
CREATE TABLE refresh_tokens (
  token_hash BLOB PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  issued_at  INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);

-- Failed sign-in counters per account and per client address (survive restarts).
CREATE TABLE auth_throttle (
  key               TEXT PRIMARY KEY,                   -- 'account:<email>' | 'address:<ip>' | 'client:<id>'
  failures          INTEGER NOT NULL,
  window_started_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE audit_log (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  id          TEXT NOT NULL UNIQUE,                     -- evt_…
  org_id      TEXT REFERENCES orgs (id) ON DELETE CASCADE, -- NULL: installation-wide event
  actor_type  TEXT NOT NULL CHECK (actor_type IN ('user', 'service_account', 'system', 'anonymous')),
  actor_id    TEXT,
  actor_label TEXT,                                     -- e-mail or name at the time
  action      TEXT NOT NULL,
  target_type TEXT,
  target_id   TEXT,
  data        TEXT,                                     -- JSON, never secrets
  request_id  TEXT,
  ip          TEXT,
  at          INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_log_by_org ON audit_log (org_id, seq);
