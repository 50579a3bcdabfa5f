-- Schema version -> 3. The published routing tables keep, next to each cluster's chosen model, the rest of the
-- pool ranked by the same terms (routers.explain: expected error + lambda x cost, ties to the cheaper), so a
-- gateway has a second choice when the first is down. Publications written before keep null: their ranking was
-- never computed, and a snapshot is not rewritten in place. (002 is the decision records.)

alter table published_routes add column if not exists fallbacks varchar[];
