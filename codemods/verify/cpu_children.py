"""Preloaded by the forkserver of a run whose cuda is the CPU (bootstrap, a machine without
CUDA): the processes it starts for the script (its module run again, DataLoader workers)
take the cuda it names for the CPU too."""

from . import simulate

simulate.install_cpu()
