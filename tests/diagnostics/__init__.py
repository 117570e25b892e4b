"""Looking inside autograd: creation sites, anomaly mode, the saved-tensor guard, profile, to_dot."""
