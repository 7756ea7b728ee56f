__version__ = "2.51.0"
