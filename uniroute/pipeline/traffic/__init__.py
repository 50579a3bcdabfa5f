"""Traffic: what the recorded decisions say back (replay, the nightly build's shadow gate, drift, a day's summary)."""
