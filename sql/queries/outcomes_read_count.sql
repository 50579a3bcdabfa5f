-- How many rows an outcomes file had. Needs outcomes_read.
select count(*) as n from outcomes_read
