"""Audit of an uploaded model: load it safely, train reference models, run LOSS / RMIA / LiRA."""
