"""Silver: one module per silver table (registry in :mod:`epoch_audit.silver.tables`), plus the
KRaft metadata replay (:mod:`~epoch_audit.silver.kraft_metadata`) and the event-field readers they
share (:mod:`~epoch_audit.silver.event_fields`)."""
