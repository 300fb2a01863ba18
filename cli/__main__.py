"""``python -m torchmend.cli``: the command line (same as ``python -m torchmend``)."""
from torchmend.cli.main import main

main()
