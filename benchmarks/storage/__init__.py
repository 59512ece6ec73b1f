"""The storage experiments of ``python -m benchmarks storage`` (``benchmarks/storage_traffic.py``),
one module per section: ``traffic`` (one worker's storage calls per trial), ``capacity`` (what
one server carries), ``suggest`` (suggestion time with running trials), ``reads`` (the
sampler's reads per trial, old code against new); ``instruments`` (counters) and ``studies``
(pre-filled studies, servers) are shared."""
