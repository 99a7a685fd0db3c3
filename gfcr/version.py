"""The gfcr version, written once: the package, its provenance records and its reports read it here."""

__version__ = "0.1.0"
