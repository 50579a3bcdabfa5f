-- Record that drift was announced for a champion on its training data; a second announcement keeps the first.
insert into drift_announcements
    (router_id, data_fingerprint, announced_at, decisions, mix_distance, far_share, reason)
values ($router_id, $data_fingerprint, $announced_at, $decisions, $mix_distance, $far_share, $reason)
on conflict do nothing
