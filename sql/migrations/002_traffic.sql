-- Schema version 1 -> 2: the traffic tables (decisions, outcomes) and their views, which sql/schema/011_traffic.sql
-- and 012_traffic_views.sql create on any store (new relations need no patch here). The version is bumped so that
-- an older uniroute refuses a store holding traffic it would not know to keep. Applied once, in the transaction
-- that records version 2 (uniroute/store/schema.py); history: never edited once released.
select 2 as schema_version;
