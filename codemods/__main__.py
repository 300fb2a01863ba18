"""``python -m torchmend``: the command line."""
import sys

try:
    from torchmend.cli.main import main
except KeyboardInterrupt:  # Ctrl-C while starting up: the same exit as later
    sys.exit(130)

main()
