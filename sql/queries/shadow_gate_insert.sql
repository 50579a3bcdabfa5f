-- The shadow gate of one build.
insert into shadow_gates values ($build_router_id, $champion_id, $n_decisions, $window_days, $spend, $champion_score,
                                 $challenger_score, $difference, $difference_se, $p_worse, $test, $verdict, $line,
                                 $created_at)
