-- A past role named in a title ("Former CEO", "Ex-CTO, Software Architect", "Retired VP Sales") no
-- longer gives the person that role's level and domain (src/title-rules.ts, PAST_ROLE): "Former
-- CEO" was c_suite. Recomputed by the same code as 0028 (the rules run ~2 µs a title); only the
-- contacts whose answer changes are written. No change row, no lastInfoChangedAt.
UPDATE contacts SET title_level = title_level(title), title_domain = title_domain(title)
WHERE title IS NOT NULL AND (title_level IS NOT title_level(title) OR title_domain IS NOT title_domain(title));
