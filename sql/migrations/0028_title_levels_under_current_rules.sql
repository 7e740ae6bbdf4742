-- titleLevel and titleDomain are inferred from a contact's title when it is imported and when its
-- title changes (src/title-rules.ts); a contact imported before a change of the rules kept what the
-- old rules said ("CEO Assistant" stayed c_suite, "Head of Analytics" other) while the same title
-- imported since gets the new answer. Recomputed by the same code, as 0019 does for company keys:
-- every contact with a title is read once (the rules run ~2 µs a title), only those that change
-- are written. Inference is no information change: no change row, no lastInfoChangedAt.
UPDATE contacts SET title_level = title_level(title), title_domain = title_domain(title)
WHERE title IS NOT NULL AND (title_level IS NOT title_level(title) OR title_domain IS NOT title_domain(title));
