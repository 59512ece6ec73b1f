"""The numerical layer (codec, models, acquisitions, optimizer, policy); never imports Optuna."""

__all__: list[str] = []
