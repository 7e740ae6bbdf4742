-- A user's e-mail is stored with full-width letters as their usual ones and a domain written in
-- its ASCII (Punycode) form in the Unicode form people type (src/normalize.ts accountEmail), and
-- sign-in, new users and new members look it up in that form: "ＡＤＭＩＮ@example.com" and
-- "jörg@xn--exmple-cua.com" were second accounts of "admin@example.com" and "jörg@exämple.com"
-- (a tester's cases). Addresses stored before are brought to that form, so that they are found.
-- Where both forms already have an account, the second stays as it is (OR IGNORE: the unique
-- index refuses it), as in 0040: no account is lost or merged, and a superuser still finds both.
UPDATE OR IGNORE users SET email = account_email(email)
WHERE (email GLOB '*[^ -~]*' OR email LIKE '%xn--%') AND email <> account_email(email);
