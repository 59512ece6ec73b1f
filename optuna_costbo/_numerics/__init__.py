"""The numerical layer (codec, models, acquisitions, optimizer, policy); never imports Optuna."""
