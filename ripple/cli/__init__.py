"""ripple's command line (``ripple --help``)."""
