"""xlt: cross-lingual transfer of natural-language-understanding models."""
__version__ = "0.1.0"
