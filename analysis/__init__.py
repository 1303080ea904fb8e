"""multipath-cc-lab analysis library: ingest -> metrics -> stats -> claims.

Pure Python over columnar data (numpy/pandas); never needs root.
"""
__version__ = "0.1.0"
