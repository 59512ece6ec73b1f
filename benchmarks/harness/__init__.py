"""The benchmark harness: one problem type (``problem``), the methods as data (``methods``),
one runner (``runner``), one results format (``cache``), one statistics module (``stats``),
the reports and figures (``report``, ``figures``), the BoTorch references (``botorch_ref``)
and every use of the package's private modules (``package_probes``)."""
