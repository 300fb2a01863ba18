"""``python -m torchmend``: the command line."""
from torchmend.cli.main import main

main()
