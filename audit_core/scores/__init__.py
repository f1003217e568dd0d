"""Score check: membership scores from any tool, TPR at low FPR and the epsilon lower bound."""
