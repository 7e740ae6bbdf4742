-- Migrations 0034 and 0036 recomputed the title levels of the titles that hold a marker ("retired",
-- "former", "(ret") or "chair", found with LIKE, which folds ASCII letters only: the same words in
-- full-width letters ("ＣＨＡＩＲ", "ＣＥＯ （Ｒｅｔｉｒｅｄ）"), which the title rules read as their ASCII
-- forms (src/title-rules.ts folds compatibility forms), kept the old rules' level. Every title with a
-- character beyond ASCII is recomputed by the same code as 0028; only the contacts whose answer
-- changes are written. No change row, no lastInfoChangedAt.
UPDATE contacts SET title_level = title_level(title), title_domain = title_domain(title)
WHERE title GLOB '*[^ -~]*'
  AND (title_level IS NOT title_level(title) OR title_domain IS NOT title_domain(title));
