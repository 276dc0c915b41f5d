"""Word alignment (eflomal) and BIO slot-label projection across translations."""
