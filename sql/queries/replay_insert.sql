-- One replay run's inputs and results.
insert into replays values ($replay_id, $created_at, $router_id, $window_from, $window_to, $n_decisions, $inputs,
                            $expected_score, $expected_cost, $results)
