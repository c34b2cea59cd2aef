-- 020_delivery_search.sql -- the operator's tenant-wide delivery search (GET /v1/deliveries,
-- src/db/db_delivery.c): newest first within a tenant and a status, and q, a case-insensitive
-- substring of the meeting's title, the recipient or the last error.
--
-- outbox_tenant_status walks one tenant's rows of one status from the newest down and stops at
-- the page's limit; a search without a status walks each status's range and merges them. An
-- outbox write already updates every index of the table (the partial indexes' predicates name
-- status, so no update of a row is HOT): this index is one more btree entry per write, on the
-- right-hand edge of its tenant's range.
--
-- q's titles come from meetings_title_trgm, a trigram index (pg_trgm, in PostgreSQL's own
-- contrib: Debian's postgresql-15 package ships it; trusted since PostgreSQL 13, so the
-- database's owner may create it without being a superuser): the matching meetings are found
-- once per search and the walk above keeps the rows of those meetings or whose recipient or last
-- error hold q. The outbox itself has no trigram index: a GIN entry per written row, on the
-- delivery's hottest path, for columns that are mostly NULL (a delivered webhook row has neither).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX outbox_tenant_status ON outbox (tenant_id, status, id);
CREATE INDEX meetings_title_trgm ON meetings USING gin (title gin_trgm_ops);
