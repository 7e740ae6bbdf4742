-- 0047 found the accounts an organization's admin made from the audit rows of that organization,
-- and a deleted organization takes its audit rows with it: an account it made looked like one a
-- superuser made (a reviewer's case). An account made any other way has an installation-wide
-- `user.created` row (POST /users, `user add`, the first start; never deleted) or, made as a new
-- organization's first admin by a superuser, that organization's `org.created` row; one made as a
-- member by anyone has a `member.added` row with userCreated, which 0047 read. An account with none
-- of these was made as a member of an organization since deleted: its password may be known to
-- that organization's admin, who is not known any more ('unknown', an id no organization has).
-- A password a superuser has set since frees it, as in 0047.
UPDATE users SET password_from_org = 'unknown'
WHERE password_from_org IS NULL
  AND superuser = 0
  AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.action = 'user.created' AND a.target_type = 'user' AND a.target_id = users.id)
  AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.action = 'org.created' AND json_extract(a.data, '$.adminUserId') = users.id)
  AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.action = 'member.added' AND a.target_type = 'user' AND a.target_id = users.id AND json_extract(a.data, '$.userCreated') = 1)
  AND NOT EXISTS (SELECT 1 FROM audit_log r WHERE r.action = 'user.updated' AND r.target_type = 'user' AND r.target_id = users.id AND json_extract(r.data, '$.passwordReset') = 1);
