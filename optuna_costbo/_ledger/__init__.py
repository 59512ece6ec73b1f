"""The cost ledger: what each trial cost and what the study has spent, read from storage."""
