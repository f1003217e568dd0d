"""The self-check: known-answer simulations behind the audits ' numbers (``python -m audit_core selfcheck``)."""
