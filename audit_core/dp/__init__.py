"""The DP claim check: DP-SGD with canaries, audited in one run (Steinke, Nasr and Jagielski 2023)."""
