"""The bundled rule library: one folder per policy plus the knob catalogue (data only)."""
