"""The rules: one module per rule (``tm201_missing_zero_grad.py``), and per pitfall a
module ``_<pitfall>.py`` with what its rules share.  The registry finds them."""
