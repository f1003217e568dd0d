"""Shared by every audit: tables (load + validate), roc (curves, TPR intervals), privacy_bound
(epsilon lower bound), report (HTML/JSON/PDF), figures (colours, log-ROC, histograms), runtime
(device, seeds, progress), errors, limits (every bound), outputs (CLI output paths) and cluster (Dask)."""
