-- How a contact was matched to its person (SPEC §5: LinkedIn, else e-mail, else name + company
-- "when exactly one person fits"): 'linkedin', 'email' or 'name'. When a second person with the
-- same normalized name + company becomes known, the contacts matched to the first one by those
-- keys alone could be either of them: they are unmatched and marked 'ambiguous'
-- (src/tracking/tracker.ts). Such a contact is matched again only by name + company, once exactly
-- one person fits again — not by its e-mail, which the first match may have brought. Contacts
-- matched before this migration keep NULL (unknown) and are left as they are.
ALTER TABLE contacts ADD COLUMN matched_by TEXT CHECK (matched_by IN ('linkedin', 'email', 'name', 'ambiguous'));
