-- A feed record known by name + company alone, among namesakes, is the person an earlier such
-- record made, known by nothing else either (src/tracking/people-repo.ts findKeyless): found by
-- one seek here, not by reading every namesake (a crowd of thousands of them is possible). Only
-- such people are in the index: feeds that give a LinkedIn URL, an e-mail or a personId add nothing to it.
CREATE INDEX people_known_by_name_only ON people (name_key, company_key, seq)
  WHERE external_id IS NULL AND linkedin_slug IS NULL AND email IS NULL;
