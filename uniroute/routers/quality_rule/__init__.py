"""The quality-only rule for pools whose models cost the same, and its kind."""
