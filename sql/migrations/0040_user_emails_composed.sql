-- A user's e-mail is stored in Unicode's composed form (NFC, src/normalize.ts accountEmail), and
-- sign-in, new users and new members look it up in that form: "jörg@…" with a precomposed ö
-- (Windows) and with o + a combining diaeresis (macOS) were two accounts that looked the same (a
-- tester's case). Addresses stored before are brought to that form, so that they are found. Only
-- addresses with a character beyond ASCII are looked at. Where both forms already have an account,
-- the one not in NFC stays as it is (OR IGNORE: the unique index refuses the second): no account is
-- lost or merged, and a superuser still finds both in the list of users.
UPDATE OR IGNORE users SET email = nfc(email)
WHERE email GLOB '*[^ -~]*' AND email <> nfc(email);
