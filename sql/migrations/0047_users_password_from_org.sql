-- The organization whose admin chose a user's password, by creating the user as a new member
-- (POST /orgs/:orgId/members with a password), until a superuser sets one (PATCH /users/:userId,
-- `contact-ledger user passwd`). That admin may still know the password, so the account joins no
-- other organization, nor becomes a superuser, until then (src/identity/password-origin.ts,
-- docs/security.md): an admin of one organization could make the account of another's colleague
-- before they did, and sign in to theirs once it was added there (a security tester's case).
-- No foreign key: a deleted organization's admin still knows the password. NULL: a password of
-- the user's own, a superuser's or the operator's.
ALTER TABLE users ADD COLUMN password_from_org TEXT;

-- Accounts made so before this version, as the audit log tells: a member added with userCreated
-- by anyone but a superuser (the first such row), and no password set by a superuser since. One
-- pass over the audit log each (it has no index by target: a look-up per user would read it all
-- for every user — a reviewer's case).
WITH made AS (
  SELECT a.target_id AS user_id, a.org_id, row_number() OVER (PARTITION BY a.target_id ORDER BY a.seq) AS n
  FROM audit_log a
  WHERE a.action = 'member.added' AND a.target_type = 'user' AND json_extract(a.data, '$.userCreated') = 1
    AND NOT (a.actor_type = 'user' AND a.actor_id IN (SELECT id FROM users WHERE superuser = 1))
)
UPDATE users SET password_from_org = made.org_id
FROM made
WHERE made.user_id = users.id AND made.n = 1
  AND users.id NOT IN (
    SELECT target_id FROM audit_log
    WHERE action = 'user.updated' AND target_type = 'user' AND target_id IS NOT NULL AND json_extract(data, '$.passwordReset') = 1
  );

-- A deleted organization takes its audit rows with it, so an account it made looks like one a
-- superuser made (a reviewer's case). An account made any other way has an installation-wide
-- `user.created` row (POST /users, `user add`, the first start; never deleted) or, made as a new
-- organization's first admin by a superuser, that organization's `org.created` row written with it
-- (the same moment: a row naming an account that existed before is no trace of how it was made,
-- a reviewer's case); one made as a member has a `member.added` row with userCreated (above). An
-- account with none of these, and no password a superuser set, was made in an organization since
-- deleted — as a member, or as its first admin — whose admin may know its password and is not
-- known any more: 'unknown', an id no organization has.
WITH traced (user_id) AS (
  SELECT target_id FROM audit_log WHERE action = 'user.created' AND target_type = 'user'
  UNION SELECT target_id FROM audit_log WHERE action = 'member.added' AND target_type = 'user' AND json_extract(data, '$.userCreated') = 1
  UNION SELECT u.id FROM audit_log a JOIN users u ON u.id = json_extract(a.data, '$.adminUserId') WHERE a.action = 'org.created' AND abs(a.at - u.created_at) < 1000
  UNION SELECT target_id FROM audit_log WHERE action = 'user.updated' AND target_type = 'user' AND json_extract(data, '$.passwordReset') = 1
)
UPDATE users SET password_from_org = 'unknown'
WHERE password_from_org IS NULL AND superuser = 0
  AND id NOT IN (SELECT user_id FROM traced WHERE user_id IS NOT NULL);
