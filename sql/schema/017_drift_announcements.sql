-- Drift announced (uniroute/pipeline/traffic/drift.py): the scheduled check emitted `uniroute.traffic.drifted` for this
-- champion on this training data, so it does not emit again every run while the traffic stays drifted; a new
-- champion (router_id) or new training data (data_fingerprint: ingested files but decisions and outcomes) can
-- fire again.
-- Grain: one row per (champion router, data fingerprint) announced: the first announcement and its measures.
create table if not exists drift_announcements (
    router_id        varchar not null,
    data_fingerprint varchar not null,
    announced_at     timestamp not null,
    decisions        bigint not null,
    mix_distance     double not null,
    far_share        double not null,
    reason           varchar not null,
    primary key (router_id, data_fingerprint)
);
