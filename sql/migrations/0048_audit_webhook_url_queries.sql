-- A webhook URL's query, where receivers often take their credential (`?key=…`), out of the audit
-- entries written before this version: since the forty-fourth session the audit log writes a
-- webhook's URL as `https://host/path?…` (src/webhooks/url-policy.ts withoutQuery), and these rows,
-- which outlive the webhook, kept the whole URL for every admin to read (a reviewer's case).
-- `?…` says there was a query; a change of the query alone says queryChanged, as new entries do.
UPDATE audit_log
SET data = json_set(data, '$.url', substr(json_extract(data, '$.url'), 1, instr(json_extract(data, '$.url'), '?')) || '…')
WHERE action IN ('webhook.created', 'webhook.deleted')
  AND json_valid(data) AND json_type(data, '$.url') = 'text'
  AND instr(json_extract(data, '$.url'), '?') > 0;

UPDATE audit_log
SET data = json_set(
  data,
  '$.url.from', CASE WHEN instr(json_extract(data, '$.url.from'), '?') > 0 THEN substr(json_extract(data, '$.url.from'), 1, instr(json_extract(data, '$.url.from'), '?')) || '…' ELSE json_extract(data, '$.url.from') END,
  '$.url.to', CASE WHEN instr(json_extract(data, '$.url.to'), '?') > 0 THEN substr(json_extract(data, '$.url.to'), 1, instr(json_extract(data, '$.url.to'), '?')) || '…' ELSE json_extract(data, '$.url.to') END
)
WHERE action = 'webhook.updated'
  AND json_valid(data) AND json_type(data, '$.url.from') = 'text' AND json_type(data, '$.url.to') = 'text'
  AND (instr(json_extract(data, '$.url.from'), '?') > 0 OR instr(json_extract(data, '$.url.to'), '?') > 0);

-- the URLs now read the same: the query alone changed
UPDATE audit_log
SET data = json_set(data, '$.url.queryChanged', json('true'))
WHERE action = 'webhook.updated'
  AND json_valid(data) AND json_type(data, '$.url.from') = 'text'
  AND json_extract(data, '$.url.from') = json_extract(data, '$.url.to')
  AND json_extract(data, '$.url.from') LIKE '%?…';
