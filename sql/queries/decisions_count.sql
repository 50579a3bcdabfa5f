-- How many decisions the store holds (before and after a file's insert: how many it added).
select count(*) from decisions
