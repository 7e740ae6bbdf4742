-- A referenceId is stored in Unicode's composed form (NFC, src/ledger/contact-input.ts): "Müller"
-- with a precomposed ü (Windows, Excel) and with u + a combining diaeresis (macOS) are one id, and
-- both were imported into one ledger, past the duplicate check (a tester's case). Ids stored before
-- are brought to that form, so that a new import's duplicate check and the referenceId filter find
-- them. Only ids with a character beyond ASCII are looked at. Where a ledger already holds both
-- forms of one id, the one not in NFC stays as it is (OR IGNORE: the unique index refuses the
-- second), so that no contact is lost or merged; the filter then finds the composed one.
UPDATE OR IGNORE contacts SET reference_id = nfc(reference_id)
WHERE reference_id IS NOT NULL AND reference_id GLOB '*[^ -~]*' AND reference_id <> nfc(reference_id);
