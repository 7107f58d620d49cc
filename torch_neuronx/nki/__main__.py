"""``python -m torch_neuronx.nki run FILE [...]``: the kernel-file runner (:mod:`.runner`)."""
import sys

from .runner import main

if __name__ == "__main__":
    sys.exit(main())
