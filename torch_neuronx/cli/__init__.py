"""The ``torch-neuronx`` command line: ``info``, ``demo``."""
