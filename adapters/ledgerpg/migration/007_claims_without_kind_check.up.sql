-- The claims table's CHECK on kind goes: every store refuses an unknown
-- kind before any statement (ledger.CheckKey), and the server re-read the
-- CHECK's text and compiled it again for every claim and every record,
-- measured at 2 to 5% of a filing's time with one filer (README, the
-- ledgers against their floor). Older replicas' statements run as before.
ALTER TABLE relayr_tracker_items DROP CONSTRAINT IF EXISTS relayr_tracker_items_kind_check;
