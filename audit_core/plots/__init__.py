"""Plotly figures shared by the pages and the reports.

``common`` holds the colours and the figures every audit uses (log-ROC, grouped
histograms); each audit's own figures, verdict text and report live in the module
named after it (``synthetic``, ``generators``, ``lira``, ``fabrication``).
"""
