-- The organization whose admin chose a user's password, by creating the user as a new member
-- (POST /orgs/:orgId/members with a password), until a superuser sets one (PATCH /users/:userId,
-- `contact-ledger user passwd`). That admin may still know the password, so the account does not
-- join another organization until then (docs/security.md): an admin of one organization could
-- make the account of another's colleague before they did, and sign in to theirs once it was
-- added there (a security tester's case). No foreign key: a deleted organization's admin still
-- knows the password. NULL: a password the user's own, a superuser or the operator set.
ALTER TABLE users ADD COLUMN password_from_org TEXT;

-- Accounts made so before this version, as the audit log tells: a member added with
-- userCreated by anyone but a superuser, and no password set by a superuser since.
UPDATE users SET password_from_org = (
  SELECT a.org_id FROM audit_log a
  WHERE a.action = 'member.added' AND a.target_type = 'user' AND a.target_id = users.id
    AND json_extract(a.data, '$.userCreated') = 1
    AND NOT (a.actor_type = 'user' AND EXISTS (SELECT 1 FROM users s WHERE s.id = a.actor_id AND s.superuser = 1))
  ORDER BY a.seq LIMIT 1
)
WHERE NOT EXISTS (
  SELECT 1 FROM audit_log r
  WHERE r.action = 'user.updated' AND r.target_type = 'user' AND r.target_id = users.id AND json_extract(r.data, '$.passwordReset') = 1
);
