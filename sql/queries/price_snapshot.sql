-- What identifies the prices in force now: today's date and the newest price set so far (prices is append-only,
-- so the prices set by then and valid by that date are the snapshot, reproducible later).
select current_date as as_of, max(set_at) as set_by from prices
