"""torchmend's library: the rules (one module per pitfall) and the engine that runs them."""

__version__ = "0.1.0"
